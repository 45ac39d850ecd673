// The holder's pages in a real browser (Chromium through playwright-core), with
// JavaScript switched off and a phone-sized viewport: an assistant publishes a draft
// over MCP, the person opens the consentUrl, enters the e-mail, ticks the box and
// submits; then opens the confirmation link from the real e-mail and presses Confirm.
// Screenshots of every page go to a temporary directory (printed as a diagnostic).
//
// Needs: /usr/bin/chromium (Debian package `chromium`; CHROMIUM_BIN overrides),
// playwright-core (devDependency), the isto binary, python3 with aiosmtpd. Skipped with
// a message when Chromium or playwright-core is absent.

import assert from "node:assert/strict";
import path from "node:path";
import test from "node:test";

import {
  connectMcp,
  extractUrls,
  mailIsFor,
  randomToken,
  tmpDir,
  waitFor,
  withIsto,
} from "./lib/harness.mjs";
import { launchBrowser, loadChromium, phonePage } from "./lib/browser.mjs";
import { stepper } from "./lib/steps.mjs";


const STATEMENT = "Hledám ojetou Škodu Octavia, nejlépe diesel";
const HIDDEN_LIMIT = 250000;
const LIMIT_RE = /250[\s\u00a0\u202f.,']?000/;
const CSP = "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'";

const { chromium, skip } = await loadChromium();

test("pages in Chromium: consent, e-mail confirmation, no JavaScript, phone viewport", { skip, timeout: 5 * 60 * 1000 }, (t) => withIsto(t, { prefix: "isto-browser-", start: false }, async (env) => {
  const step = stepper(t);
  const shots = tmpDir("isto-screenshots-");
  const { smtp } = env;
  let isto = null;
  let mcp = null;
  let browser = null;
  env.defer(() => t.diagnostic(`screenshots in ${shots}`));
  env.defer(() => mcp?.close());
  env.defer(() => browser?.close());

  const s = { email: `browser-${randomToken()}@buyer.example` };
  const shot = async (page, name) => {
    const file = path.join(shots, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    return file;
  };
  const callOk = async (name, args) => {
    const res = await mcp.callTool(name, args);
    assert.ok(!res.isError, `${name} failed: ${JSON.stringify(res)}`);
    return res.structuredContent;
  };
  const status = async () => (await callOk("intent_get_intent", { intentCode: s.intentCode })).intent.status;

  await step("isto serve and an MCP client", async () => {
    isto = await env.start();
    mcp = await connectMcp(isto.mcpUrl);
  });

  await step("an assistant publishes a draft with a hidden limit", async () => {
    const sc = await callOk("intent_publish_intent", {
      statement: STATEMENT,
      criteria: { category: "vehicles", make: "Škoda", model: "Octavia" },
      area: "Jihomoravský kraj",
      budget: { max: 400000, currency: "CZK" },
      hiddenLimit: HIDDEN_LIMIT,
    });
    assert.equal(sc.intent.status, "awaiting_consent");
    s.intentCode = sc.intentCode;
    s.consentUrl = sc.consentUrl;
  });

  await step("Chromium starts (JavaScript off, phone viewport)", async () => {
    browser = await launchBrowser(chromium);
    s.page = await phonePage(browser, "cs-CZ");
    s.styles = [];
    s.failed = [];
    s.console = [];
    s.page.on("response", (r) => {
      if (new URL(r.url()).pathname === "/assets/style.css") s.styles.push(r.status());
    });
    s.page.on("requestfailed", (r) => s.failed.push(`${r.url()} ${r.failure()?.errorText}`));
    s.page.on("console", (m) => s.console.push(`${m.type()}: ${m.text()}`));
  });

  await step("the consent page shows the request, says a limit is set, hides its value", async () => {
    const { page } = s;
    const res = await page.goto(s.consentUrl);
    assert.equal(res.status(), 200);
    const h = res.headers();
    assert.equal(h["cache-control"], "no-store");
    assert.equal(h["content-security-policy"], CSP);
    assert.equal(h["x-frame-options"], "DENY");
    assert.equal(h["referrer-policy"], "no-referrer");
    assert.equal(h["x-robots-tag"], "noindex, nofollow");
    assert.equal(await page.locator("html").getAttribute("lang"), "cs");
    assert.equal(await page.locator('meta[name="referrer"]').getAttribute("content"), "no-referrer");
    const text = await page.locator("body").innerText();
    assert.ok(text.includes(STATEMENT), `statement missing:\n${text}`);
    assert.match(text, /limit/i);
    assert.doesNotMatch(await page.content(), LIMIT_RE, "the page contains the hidden limit");
    // A page behind a link (links leak) shows no budget.
    assert.doesNotMatch(text, /400[\s\u00a0]?000/, "the page shows the budget");
    assert.ok(text.includes("Jihomoravský kraj"), "region name missing");
    assert.ok(s.styles.includes(200) || s.styles.includes(304), `stylesheet not loaded: ${s.styles.join(",")}`);
    // Readable on a phone: nothing wider than the viewport.
    const box = await page.locator("main").boundingBox();
    assert.ok(box && box.width <= 390, `main is ${box?.width}px wide on a 390px screen`);
    t.diagnostic(`consent page: ${await shot(page, "1-consent")}`);
  });

  await step("without the checkbox the browser does not submit (required)", async () => {
    const { page } = s;
    await page.getByLabel("Vaše e-mailová adresa").fill(s.email);
    await page.getByRole("button", { name: "Udělit souhlas" }).click();
    assert.equal(new URL(page.url()).pathname, new URL(s.consentUrl).pathname);
    assert.equal(await page.locator("#accept:invalid").count(), 1);
    assert.equal(await status(), "awaiting_consent");
  });

  await step("fill the e-mail, tick the box, submit: 'check your e-mail', no address shown", async () => {
    const { page } = s;
    await page.getByLabel("Vaše e-mailová adresa").fill(s.email);
    await page.getByRole("checkbox", { name: "Souhlasím s textem výše" }).check();
    await Promise.all([page.waitForURL(/\/consent\/[^/]+\/sent$/), page.getByRole("button", { name: "Udělit souhlas" }).click()]);
    const text = await page.locator("body").innerText();
    assert.match(text, /Zkontrolujte si e-mail/);
    assert.ok(!(await page.content()).includes(s.email), "the page shows the e-mail address");
    assert.equal(await status(), "awaiting_email_confirmation");
    t.diagnostic(`sent page: ${await shot(page, "2-sent")}`);
  });

  await step("the confirmation link shows a Confirm button and does not confirm", async () => {
    const msg = await smtp.waitForMessage((m) => mailIsFor(m, s.email), { timeout: 30000, what: `confirmation e-mail to ${s.email}` });
    const link = extractUrls(msg.text ?? msg.html).find((u) => u.includes("/confirm/"));
    assert.ok(link, `no /confirm/ link in:\n${msg.text ?? msg.html}`);
    const res = await s.page.goto(link);
    assert.equal(res.status(), 200);
    assert.equal(await status(), "awaiting_email_confirmation");
    t.diagnostic(`confirm page: ${await shot(s.page, "3-confirm")}`);
  });

  await step("pressing Confirm makes the request active", async () => {
    const { page } = s;
    await Promise.all([page.waitForURL(/\/confirm\/[^/]+\/done$/), page.getByRole("button", { name: "Potvrdit" }).click()]);
    assert.match(await page.locator("h1").innerText(), /aktivní/);
    await waitFor(async () => (await status()) === "active", { timeout: 10000, what: "status active" });
    t.diagnostic(`done page: ${await shot(page, "4-active")}`);
  });

  // Issue 13 point 4: the home page in the browser's language with a switcher, its
  // links, and the 404 page of an address that is no page.
  await step("the home page is in Czech (Accept-Language), links to sign-in and shows the MCP URL", async () => {
    const { page } = s;
    const res = await page.goto(new URL("/", isto.mcpUrl).href);
    assert.equal(res.status(), 200);
    assert.equal(await page.locator("html").getAttribute("lang"), "cs");
    assert.match(await page.locator("main").innerText(), /držitel poptávek Isto Intents/);
    assert.equal(await page.locator("code.url").innerText(), isto.mcpUrl);
    for (const [name, href] of [["Přihlášení", "/signin"], ["Vytvoření účtu", "/signup"], ["Moje poptávky", "/me"]]) {
      assert.equal(await page.getByRole("link", { name, exact: true }).getAttribute("href"), href, name);
    }
    const box = await page.locator("main").boundingBox();
    assert.ok(box && box.width <= 390, `main is ${box?.width}px wide on a 390px screen`);
    t.diagnostic(`home page: ${await shot(page, "5-home-cs")}`);
  });

  await step("the switcher's English link shows the home page in English (a plain GET)", async () => {
    const { page } = s;
    await Promise.all([page.waitForURL(/\/\?lang=en$/), page.getByRole("link", { name: "English" }).click()]);
    assert.equal(await page.locator("html").getAttribute("lang"), "en");
    assert.match(await page.locator("main").innerText(), /an Isto Intents intent holder/);
    assert.equal(await page.getByRole("link", { name: "English" }).getAttribute("aria-current"), "page");
    t.diagnostic(`home page, English: ${await shot(page, "6-home-en")}`);
    await Promise.all([page.waitForURL(/\/signin$/), page.getByRole("link", { name: "Sign in", exact: true }).click()]);
    assert.equal(await page.locator("html").getAttribute("lang"), "cs", "the sign-in page keeps Accept-Language");
  });

  await step("an address that is no page: a 404 page in the layout with a link home", async () => {
    const { page } = s;
    const res = await page.goto(new URL("/no/such/page", isto.mcpUrl).href);
    assert.equal(res.status(), 404);
    assert.equal(res.headers()["content-security-policy"], CSP);
    assert.equal(await page.locator("h1").innerText(), "Stránka nenalezena");
    t.diagnostic(`404 page: ${await shot(page, "7-not-found")}`);
    await Promise.all([page.waitForURL((u) => u.pathname === "/"), page.getByRole("link", { name: "Na úvodní stránku" }).click()]);
    assert.equal(await page.locator("html").getAttribute("lang"), "cs");
  });

  await step("no failed requests and no CSP violations", () => {
    assert.deepEqual(s.failed, []);
    const csp = s.console.filter((l) => /Content Security Policy|Refused to/i.test(l));
    assert.deepEqual(csp, []);
  }, { independent: true });
}));
