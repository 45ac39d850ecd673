// Issue 13 point 2 in a real browser: the person chooses how often e-mail comes on the
// results page (Debian Chromium through playwright-core, JavaScript off, phone
// viewport) and confirms the choice from the e-mail that asks them (a results link may
// have leaked), and the next digest from the real SMTP server follows the choice. The
// digest interval ("as they come") is set to 2 s by a config file, so a digest that
// is due goes out on the mail worker's next pass (at most 5 s); "pause" and "daily"
// then hold a new match back over a window of several passes, and switching back to
// "as they come" sends it, with the cadence line and the results link in the mail.
// Screenshots go to a temporary directory (printed as a diagnostic), as in
// browser.test.mjs.
//
// Needs: /usr/bin/chromium (CHROMIUM_BIN overrides), playwright-core, the isto binary,
// python3 with aiosmtpd. Skipped with a message when Chromium or playwright-core is
// absent.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import test from "node:test";

import { connectMcp, extractUrls, mailIsFor, randomToken, tmpDir, waitFor, withIsto } from "./lib/harness.mjs";
import { writeJsonl } from "./lib/seller.mjs";
import { launchBrowser, loadChromium, phonePage } from "./lib/browser.mjs";
import { stepper } from "./lib/steps.mjs";


/** Seconds between digests "as they come" (`mail.digest_min_interval_secs`). */
const INTERVAL_SECS = 2;
/** How long a held-back digest is watched for: several worker passes (5 s each) after the interval. */
const QUIET_MS = (INTERVAL_SECS + 2 * 5 + 1) * 1000;

const { chromium, skip } = await loadChromium();

/** An Octavia offer in Bratislava (it matches the test's intent). */
const offer = (ref, title) => ({
  ref,
  title,
  description: `${title}. Test offer of the cadence e2e test.`,
  category: "vehicles",
  attributes: { make: "Škoda", model: "Octavia", year: 2018, fuel: "diesel" },
  price: { amount: 12900, currency: "EUR" },
  area: { country: "SK", regions: ["SK-BL"], place: "Bratislava" },
  seller: { name: "cadence test dealer", url: "https://dealer.example/" },
  url: `https://dealer.example/${ref}`,
});

const mailText = (m) => `${m.text ?? ""}\n${m.html ?? ""}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test("cadence chosen on the results page decides the next digest (Chromium, real SMTP)", { skip, timeout: 5 * 60 * 1000 }, (t) => withIsto(t, { prefix: "isto-cadence-", start: false }, async (env) => {
  const step = stepper(t);
  const shots = tmpDir("isto-cadence-screenshots-");
  const { smtp } = env;
  const config = path.join(env.work, "isto.toml");
  fs.writeFileSync(config, ["[mail]", `digest_min_interval_secs = ${INTERVAL_SECS}`, ""].join("\n"));
  let isto = null;
  let mcp = null;
  let browser = null;
  env.defer(() => t.diagnostic(`screenshots in ${shots}`));
  env.defer(() => mcp?.close());
  env.defer(() => browser?.close());

  const s = { email: `cadence-${randomToken()}@buyer.example`, tokens: [] };
  const shot = async (name) => {
    const file = path.join(shots, `${name}.png`);
    await s.page.screenshot({ path: file, fullPage: true });
    return file;
  };
  const digests = () => smtp.messages().filter((m) => mailIsFor(m, s.email) && /^Nové nabídky/.test(m.subject ?? ""));
  const importOffers = async (name, rows) => {
    const res = await isto.importOffers(writeJsonl(env.work, name, rows), { env: { ISTO_CONFIG: config } });
    assert.equal(res.code, 0, `import: exit ${res.code}\n${res.stdout}\n${res.stderr}`);
  };
  const asks = () => smtp.messages().filter((m) => mailIsFor(m, s.email) && /^Potvrďte změnu e-mailů/.test(m.subject ?? ""));
  /**
   * Chooses the cadence whose radio label starts with `label` and saves (no session: the
   * results link may have leaked, so nothing changes yet), then confirms it from the
   * e-mail that asks the person; returns the page text.
   */
  const choose = async (label) => {
    const { page } = s;
    const before = asks().length;
    await page.getByRole("radio", { name: new RegExp(`^${label}`) }).check();
    await Promise.all([page.waitForURL(/\/results\/[^/?]+\?sent=cadence$/), page.getByRole("button", { name: "Uložit" }).click()]);
    assert.match(await page.locator("main").innerText(), /Poslali jsme vám e-mail k potvrzení této změny/);
    const ask = await waitFor(() => asks()[before], { timeout: 30000, what: `the e-mail asking to confirm "${label}"` });
    assert.match(mailText(ask), new RegExp(`chodily: ${label}`));
    await page.goto(extractUrls(mailText(ask)).find((u) => u.includes("/cadence/")));
    await Promise.all([page.waitForURL(/\/results\/[^/?]+\?saved=cadence$/), page.getByRole("button", { name: "Potvrdit změnu" }).click()]);
    const text = await page.locator("main").innerText();
    assert.match(text, new RegExp(`Uloženo\\. E-maily budou chodit: ${label}`));
    assert.ok(await page.getByRole("radio", { name: new RegExp(`^${label}`) }).isChecked(), `${label} is not checked after saving`);
    return text;
  };

  await step("isto serve (digest interval 2 s), one offer, an MCP client, Chromium", async () => {
    isto = await env.start({ env: { ISTO_CONFIG: config } });
    await importOffers("first.jsonl", [offer("cad-1", "Škoda Octavia 2.0 TDI Combi")]);
    mcp = await connectMcp(isto.mcpUrl);
    browser = await launchBrowser(chromium);
    s.page = await phonePage(browser, "cs-CZ");
  });

  await step("a draft, consent and confirmation in the browser; the used confirmation link shows only its outcome", async () => {
    const res = await mcp.callTool("intent_publish_intent", {
      statement: "Hledám ojetou Škodu Octavia kombi",
      criteria: { category: "vehicles", make: "Škoda", model: "Octavia" },
      area: "SK",
    });
    assert.ok(!res.isError, JSON.stringify(res));
    const { page } = s;
    await page.goto(res.structuredContent.consentUrl);
    await page.getByLabel("Vaše e-mailová adresa").fill(s.email);
    await page.getByRole("checkbox", { name: "Souhlasím s textem výše" }).check();
    await Promise.all([page.waitForURL(/\/sent$/), page.getByRole("button", { name: "Udělit souhlas" }).click()]);
    const mail = await smtp.waitForMessage((m) => mailIsFor(m, s.email), { what: "the confirmation e-mail" });
    assert.match(mailText(mail), /Po potvrzení budou e-maily o této poptávce chodit: průběžně, hned jak přijdou\./);
    s.results = extractUrls(mailText(mail)).find((u) => u.includes("/results/"));
    assert.ok(s.results, `no results link in the confirmation e-mail:\n${mailText(mail)}`);
    s.tokens.push(new URL(s.results).pathname.split("/")[2]);
    await page.goto(extractUrls(mailText(mail)).find((u) => u.includes("/confirm/")));
    await Promise.all([page.waitForURL(/\/confirm\/[^/]+\/done$/), page.getByRole("button", { name: "Potvrdit" }).click()]);
    // A used confirmation link may have leaked: no form there; the cadence is on the results page.
    assert.equal(await page.locator("form").count(), 0, "the used confirmation link offers a form");
    assert.match(await page.locator("main").innerText(), /stránku výsledků/);
    t.diagnostic(`confirmed: ${await shot("1-confirmed")}`);
  });

  await step("the first digest comes as they come and says so, with the results link", async () => {
    const d = await waitFor(() => digests()[0], { timeout: 30000, what: "the first digest" });
    const text = mailText(d);
    assert.match(text, /Škoda Octavia 2\.0 TDI Combi/);
    assert.match(text, /E-maily o této poptávce chodí: průběžně, hned jak přijdou\./);
    assert.match(text, /Jak často chodí \(průběžně, denně, týdně nebo pozastavit\), změníte na stránce výsledků:/);
    // Every mail carries a results link (each mail its own manage token).
    s.results = extractUrls(text).find((u) => u.includes("/results/"));
    assert.ok(s.results, `the digest has no results link:\n${text}`);
    s.tokens.push(new URL(s.results).pathname.split("/")[2]);
  });

  await step("pause on the results page: a new match shows on the page, no digest comes", async () => {
    const { page } = s;
    const res = await page.goto(s.results);
    assert.equal(res.status(), 200);
    await choose("pozastaveno");
    t.diagnostic(`paused: ${await shot("2-results-paused")}`);
    await importOffers("second.jsonl", [offer("cad-2", "Škoda Octavia 1.6 TDI Style")]);
    await waitFor(async () => {
      await page.reload();
      return (await page.locator("main").innerText()).includes("Škoda Octavia 1.6 TDI Style");
    }, { timeout: 20000, what: "the new match on the results page" });
    // The time window under test: several mail worker passes in which no digest may come.
    await sleep(QUIET_MS);
    assert.equal(digests().length, 1, "a digest came while paused");
  });

  await step("daily: the last digest was seconds ago, so still no digest", async () => {
    await choose("denně");
    // The time window under test, again.
    await sleep(QUIET_MS);
    assert.equal(digests().length, 1, "a digest came within a day of the last one");
  });

  await step("back to as they come: the match found during the pause is mailed, the mail says the cadence", async () => {
    await choose("průběžně");
    const d = await waitFor(() => digests()[1], { timeout: 30000, what: "the digest after resuming" });
    const text = mailText(d);
    assert.match(text, /Škoda Octavia 1\.6 TDI Style/);
    assert.doesNotMatch(text, /Škoda Octavia 2\.0 TDI Combi/, "an offer mailed before came again");
    assert.match(text, /E-maily o této poptávce chodí: průběžně, hned jak přijdou\./);
    const link = extractUrls(text).find((u) => u.includes("/results/"));
    assert.ok(link, `the digest has no results link:\n${text}`);
    s.tokens.push(new URL(link).pathname.split("/")[2]);
    // The new link shows the same choice.
    await s.page.goto(link);
    assert.ok(await s.page.getByRole("radio", { name: /^průběžně/ }).isChecked());
    t.diagnostic(`resumed: ${await shot("3-results-resumed")}`);
  });

  await step("the log has no token-bearing URL", async () => {
    assert.ok(s.tokens.length >= 2 && s.tokens.every((tk) => tk && tk.length >= 20), JSON.stringify(s.tokens));
    const settled = await isto.settledLog();
    for (const tk of s.tokens) assert.ok(!settled.includes(tk), "a results token is in the log");
    assert.match(settled, /delivery cadence changed/);
  }, { independent: true });
}));
