// Issue 13 point 3 in a real browser and a real mailbox: every delivered offer says in
// words why it was sent — the criteria it meets, its area and "within your price limit"
// (pass/fail only: never the hidden limit, and the same words for an offer just under
// it and one far under) — in the intent's language, in the digest e-mail (real SMTP),
// on the results page (Debian Chromium through playwright-core, JavaScript off, phone
// viewport) and in `intent_list_matches` (`extensions.reasons` in words, the machine
// codes in `extensions.reasonCodes`). Two intents, one Czech and one English.
// Screenshots go to a temporary directory (printed as a diagnostic), as in
// browser.test.mjs.
//
// Needs: /usr/bin/chromium (CHROMIUM_BIN overrides), playwright-core, the isto binary,
// python3 with aiosmtpd. Skipped with a message when Chromium or playwright-core is
// absent.

import assert from "node:assert/strict";
import path from "node:path";
import test from "node:test";

import { connectMcp, extractUrls, mailIsFor, randomToken, tmpDir, waitFor, withIsto } from "./lib/harness.mjs";
import { writeJsonl } from "./lib/seller.mjs";
import { launchBrowser, loadChromium, phonePage } from "./lib/browser.mjs";
import { stepper } from "./lib/steps.mjs";


const HIDDEN_LIMIT = 15000;
const LIMIT_RE = /15[\s\u00a0\u202f.,']?000/;

const { chromium, skip } = await loadChromium();

/** An Octavia diesel offer in Bratislava at `amount` EUR. */
const offer = (ref, title, amount) => ({
  ref,
  title,
  description: `${title}. Test offer of the explanation e2e test.`,
  category: "vehicles",
  attributes: { make: "SKODA", model: "Octavia", year: 2018, fuel: "diesel" },
  price: { amount, currency: "EUR" },
  area: { country: "SK", regions: ["SK-BL"], place: "Bratislava" },
  seller: { name: "explain test dealer", url: "https://dealer.example/" },
  url: `https://dealer.example/${ref}`,
});

// One EUR under the hidden limit, and far under it; one over (never delivered).
const OFFERS = [
  offer("why-near", "Škoda Octavia 2.0 TDI Combi", HIDDEN_LIMIT - 1),
  offer("why-far", "Škoda Octavia 1.6 TDI Style", 4900),
  offer("why-over", "Škoda Octavia RS Challenge", HIDDEN_LIMIT + 1),
];

const CASES = [
  {
    lang: "cs",
    locale: "cs-CZ",
    statement: "Hledám ojetou Škodu Octavii, nafta, Bratislavský kraj",
    subject: /^Nové nabídky/,
    heading: "Proč tato nabídka:",
    reasons: [
      "značka Škoda, model Octavia, palivo diesel",
      "ve vaší oblasti: Bratislava (Bratislavský kraj)",
      "v rámci vašeho cenového limitu",
      "odpovídá slovům vaší poptávky",
    ],
  },
  {
    lang: "en",
    locale: "en-GB",
    statement: "Looking for a used Skoda Octavia diesel in the Bratislava region",
    subject: /^New offers/,
    heading: "Why this offer:",
    reasons: [
      "make Škoda, model Octavia, fuel diesel",
      "in your area: Bratislava (Bratislava Region)",
      "within your price limit",
      "matches the words of your request",
    ],
  },
];

const mailText = (m) => `${m.text ?? ""}\n${m.html ?? ""}`;
/** Text with every kind of space made one plain space (mail and page wrap differently). */
const flat = (s) => s.replace(/[\s\u00a0\u202f]+/g, " ").trim();

test("explanations in words on the results page, in the digest and in intent_list_matches (Chromium, real SMTP, cs and en)", { skip, timeout: 5 * 60 * 1000 }, (t) => withIsto(t, { prefix: "isto-explain-", start: false }, async (env) => {
  const step = stepper(t);
  const shots = tmpDir("isto-explain-screenshots-");
  const { smtp } = env;
  let isto = null;
  let mcp = null;
  let browser = null;
  env.defer(() => t.diagnostic(`screenshots in ${shots}`));
  env.defer(() => mcp?.close());
  env.defer(() => browser?.close());

  await step("isto serve, three offers (one over the limit), an MCP client, Chromium", async () => {
    isto = await env.start();
    const res = await isto.importOffers(writeJsonl(env.work, "offers.jsonl", OFFERS));
    assert.equal(res.code, 0, `import: exit ${res.code}\n${res.stdout}\n${res.stderr}`);
    mcp = await connectMcp(isto.mcpUrl);
    browser = await launchBrowser(chromium);
  });

  for (const c of CASES) {
    const s = { email: `explain-${c.lang}-${randomToken()}@buyer.example` };
    const want = `${c.heading} ${c.reasons.join("; ")}`;

    await step(`${c.lang}: publish with a hidden limit, consent and confirm in the browser`, async () => {
      s.page = await phonePage(browser, c.locale);
      const res = await mcp.callTool("intent_publish_intent", {
        statement: c.statement,
        criteria: { category: "vehicles", make: "Škoda", model: "Octavia", fuel: "diesel" },
        area: "SK-BL",
        hiddenLimit: HIDDEN_LIMIT,
      });
      assert.ok(!res.isError, JSON.stringify(res));
      assert.equal(res.structuredContent.intent.language, c.lang, "the statement's language");
      s.intentCode = res.structuredContent.intentCode;
      const { page } = s;
      await page.goto(res.structuredContent.consentUrl);
      await page.locator("input#email").fill(s.email);
      await page.locator("input#accept").check();
      await Promise.all([page.waitForURL(/\/sent$/), page.locator("form button[type=submit]").first().click()]);
      const mail = await smtp.waitForMessage((m) => mailIsFor(m, s.email), { what: `the ${c.lang} confirmation e-mail` });
      await page.goto(extractUrls(mailText(mail)).find((u) => u.includes("/confirm/")));
      await Promise.all([page.waitForURL(/\/confirm\/[^/]+\/done$/), page.locator("form button[type=submit]").first().click()]);
    });

    await step(`${c.lang}: the digest says why each offer came, in words, without the limit`, async () => {
      const d = await waitFor(
        () => smtp.messages().find((m) => mailIsFor(m, s.email) && c.subject.test(m.subject ?? "")),
        { timeout: 30000, what: `the ${c.lang} digest` },
      );
      const text = mailText(d);
      assert.match(text, /Škoda Octavia 2\.0 TDI Combi/);
      assert.match(text, /Škoda Octavia 1\.6 TDI Style/);
      assert.doesNotMatch(text, /RS Challenge/, "the offer over the hidden limit was mailed");
      const lines = text.split(/\r?\n/).map(flat).filter((l) => l.startsWith(c.heading));
      assert.deepEqual(lines, [want, want], `the digest's why lines:\n${text}`);
      assert.doesNotMatch(text, LIMIT_RE, "the digest names the hidden limit");
      s.results = extractUrls(text).find((u) => u.includes("/results/"));
      assert.ok(s.results, `the digest has no results link:\n${text}`);
    });

    await step(`${c.lang}: the results page shows the same words under each offer`, async () => {
      const { page } = s;
      const res = await page.goto(s.results);
      assert.equal(res.status(), 200);
      assert.equal(await page.locator("html").getAttribute("lang"), c.lang);
      const whys = (await page.locator("ol.offers p.why").allInnerTexts()).map(flat);
      assert.deepEqual(whys, [want, want], "the results page's explanations");
      for (const why of await page.locator("ol.offers p.why").all()) {
        assert.ok(await why.isVisible(), "an explanation is not visible");
      }
      const main = await page.locator("main").innerText();
      assert.doesNotMatch(main, LIMIT_RE, "the results page names the hidden limit");
      assert.doesNotMatch(main, /RS Challenge/);
      const noScroll = await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
      assert.ok(noScroll, "the explanations make the phone page scroll sideways");
      const file = path.join(shots, `results-explained-${c.lang}.png`);
      await page.screenshot({ path: file, fullPage: true });
      t.diagnostic(`${c.lang} results page: ${file}`);
    });

    await step(`${c.lang}: intent_list_matches carries the words in reasons and the codes in reasonCodes`, async () => {
      const res = await mcp.callTool("intent_list_matches", { intentCode: s.intentCode });
      assert.ok(!res.isError, JSON.stringify(res));
      const { matches } = res.structuredContent;
      assert.equal(matches.length, 2, JSON.stringify(matches));
      for (const m of matches) {
        assert.deepEqual(m.extensions.reasons, c.reasons, m.offer.title);
        assert.deepEqual(m.extensions.reasonCodes, ["category", "criteria", "area", "price", "text"]);
        assert.equal(typeof m.extensions.score, "number");
        assert.doesNotMatch(JSON.stringify(m.extensions), LIMIT_RE);
      }
    });
  }
}));
