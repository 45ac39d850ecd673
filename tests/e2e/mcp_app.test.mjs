// isto's MCP App (io.modelcontextprotocol/ui, SEP-1865) in Debian Chromium through the
// official host SDK. A host page (lib/app_host.mjs, bundled with esbuild at test time)
// connects to isto's /mcp with the official client (@modelcontextprotocol/client,
// 2026-07-28, declaring the extension), reads the view the tools link to and renders it
// in a sandboxed iframe with the official AppBridge (@modelcontextprotocol/ext-apps).
// The page is served by a small static server the test starts, which also passes /mcp
// through to isto (same origin: isto answers no cross-origin request).
//
// On the real listings (../shared/data, imported with isto admin offers import), for
// intents in sk, cs and en (published with the official Node client, consented and
// confirmed through the pages):
//   - intent_search_offers and intent_list_matches: the cards show the listings' titles
//     and prices and, for matches, the holder's "why this offer" words, in the host's
//     language; with `since` (the previous nextSince) the new cards are marked;
//   - intent_publish_intent: the status card's consent button makes the host receive a
//     ui/open-link request for exactly the result's consentUrl; intent_get_intent of an
//     active intent shows the match count and the delivery cadence;
//   - the view shows no intentCode, token, contact or hidden limit;
//   - Chromium's request log has no request of the view's frame, and none to any
//     origin but the host page's;
//   - axe-core (WCAG 2.0/2.1 A and AA and best practices) finds no violation in the
//     cards and the status cards, light and dark, at 320 px, and the view does not scroll
//     sideways; screenshots are kept (directory printed as a diagnostic).
//
// Needs: the listings, /usr/bin/chromium (CHROMIUM_BIN), playwright-core, axe-core,
// esbuild and @modelcontextprotocol/ext-apps (devDependencies), the isto binary, python3
// with aiosmtpd. Skipped with a message when any is absent.

import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import test from "node:test";
import { fileURLToPath } from "node:url";

import { buildCatalogue, dataAvailable, DATA_DIR } from "./lib/catalogue.mjs";
import { connectMcp, freePort, randomToken, tmpDir, waitFor, withIsto } from "./lib/harness.mjs";
import { consentAndConfirm } from "./lib/seller.mjs";
import { launchBrowser, loadChromium, readAxe } from "./lib/browser.mjs";
import { stepper } from "./lib/steps.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"];

const HIDDEN_LIMIT = 250000;
const LIMIT_RE = /250[\s\u00a0\u202f.,']?000/;
const CRITERIA = { category: "vehicles", make: "Škoda", model: "Octavia" };
const LANGS = [
  {
    lang: "sk",
    locale: "sk-SK",
    statement: "Hľadám ojazdenú Škodu Octavia v Juhomoravskom kraji",
    offers: "Ponuky",
    matches: "Ponuky pre váš dopyt",
    why: "Prečo táto ponuka:",
    fresh: "Nová",
  },
  {
    lang: "cs",
    locale: "cs-CZ",
    statement: "Hledám ojetou Škodu Octavii v Jihomoravském kraji",
    offers: "Nabídky",
    matches: "Nabídky pro vaši poptávku",
    why: "Proč tato nabídka:",
    fresh: "Nová",
  },
  {
    lang: "en",
    locale: "en-GB",
    statement: "Looking for a used Skoda Octavia in the South Moravian region",
    offers: "Offers",
    matches: "Offers for your request",
    why: "Why this offer:",
    fresh: "New",
  },
];

const { chromium, skip, esbuild, axeSource } = !dataAvailable()
  ? { skip: `real listing data not found in ${DATA_DIR}` }
  : await loadChromium({
      more: async () => {
        const esbuild = await import("esbuild");
        await import("@modelcontextprotocol/ext-apps/app-bridge");
        return { esbuild, axeSource: readAxe() };
      },
      missing: "playwright-core, esbuild, axe-core or @modelcontextprotocol/ext-apps is missing",
    });

/** isto's amount format: whole units, thousands grouped by no-break spaces. */
const amount = (a) => String(Math.round(a)).replace(/\B(?=(\d{3})+(?!\d))/g, "\u00a0");
const price = (p) => `${amount(p.amount)}\u00a0${p.currency}`;
const flat = (s) => s.replace(/[\s\u00a0\u202f]+/g, " ").trim();

/** Serves the host page and its bundle; passes /mcp through to `target` (isto). */
async function hostServer(dir, target) {
  const port = await freePort();
  const upstream = new URL(target);
  const files = {
    "/": ["text/html; charset=utf-8", fs.readFileSync(path.join(dir, "host.html"))],
    "/host.js": ["text/javascript; charset=utf-8", fs.readFileSync(path.join(dir, "host.js"))],
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    if (url.pathname === "/mcp") {
      const headers = { ...req.headers, host: upstream.host };
      delete headers.origin;
      delete headers.referer;
      const up = http.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers }, (r) => {
        res.writeHead(r.statusCode, r.headers);
        r.pipe(res);
      });
      up.on("error", (e) => {
        res.writeHead(502);
        res.end(String(e));
      });
      req.pipe(up);
      return;
    }
    const f = files[url.pathname];
    if (!f || req.method !== "GET") {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, { "content-type": f[0], "cache-control": "no-store" });
    res.end(f[1]);
  });
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${port}/`, origin: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(r)) };
}

test("MCP App: cards and status card in Chromium through the official AppBridge (sk, cs, en; axe; no request of its own)", { skip, timeout: 15 * 60 * 1000 }, (t) =>
  withIsto(t, { prefix: "isto-app-", start: false }, async (env) => {
    const step = stepper(t);
    const shots = process.env.ISTO_APP_SHOTS ?? tmpDir("isto-app-screenshots-");
    fs.mkdirSync(shots, { recursive: true });
    const { smtp, work } = env;
    let isto = null;
    let mcp = null;
    let browser = null;
    let host = null;
    let page = null;
    const requests = [];
    const s = { intents: {}, catalogue: null };
    env.defer(() => t.diagnostic(`screenshots in ${shots}`));
    env.defer(() => mcp?.close());
    env.defer(() => browser?.close());
    env.defer(() => host?.close());

    /** Shows a tool's view in the host page; its frame and the tool's result. */
    async function show(tool, args, { locale = "en-GB", theme = "light", width = 640 } = {}) {
      const result = await page.evaluate((o) => window.istoHost.show(o), { tool, args, locale, theme, width });
      const frame = await (await page.$("#stage iframe")).contentFrame();
      await frame.waitForFunction(() => document.querySelector("#view")?.getAttribute("aria-busy") === "false");
      return { frame, result };
    }
    const cards = (frame) =>
      frame.$$eval("li.card", (els) =>
        els.map((e) => ({
          title: e.querySelector("h2").lastChild.textContent,
          price: e.querySelector(".price").textContent,
          why: e.querySelector(".why")?.textContent ?? null,
          fresh: !!e.querySelector(".badge"),
          link: e.querySelector("a.open")?.getAttribute("href") ?? null,
        })),
      );

    await step("the real listings imported, isto serve, the host page bundled and served, Chromium", async () => {
      s.catalogue = buildCatalogue(work);
      s.byUrl = new Map(s.catalogue.offers.map((o) => [o.url, o]));
      isto = await env.start();
      const res = await isto.importOffers(s.catalogue.path);
      assert.equal(res.code, 0, `import: exit ${res.code}\n${res.stdout}\n${res.stderr}`);
      const dir = path.join(work, "host");
      fs.mkdirSync(dir);
      await esbuild.build({
        entryPoints: [path.join(HERE, "lib/app_host.mjs")],
        bundle: true,
        format: "esm",
        platform: "browser",
        target: "chrome120",
        outfile: path.join(dir, "host.js"),
        logLevel: "silent",
      });
      fs.writeFileSync(
        path.join(dir, "host.html"),
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>isto MCP App host</title>' +
          '<link rel="icon" href="data:,"></head><body><main><h1>Host</h1></main><script type="module" src="/host.js"></script></body></html>',
      );
      host = await hostServer(dir, isto.baseUrl);
      mcp = await connectMcp(isto.mcpUrl);
      browser = await launchBrowser(chromium);
      const context = await browser.newContext({ viewport: { width: 700, height: 900 } });
      page = await context.newPage();
      page.on("request", (r) => requests.push({ url: r.url(), main: r.frame() === page.mainFrame() }));
      await page.goto(host.url);
      await page.waitForFunction(() => !!window.istoHost);
    });

    for (const c of LANGS) {
      await step(`${c.lang}: an intent published with the official client, consented and confirmed`, async () => {
        const res = await mcp.callTool("intent_publish_intent", {
          statement: c.statement,
          criteria: CRITERIA,
          area: "CZ-64",
          budget: { max: 400000, currency: "CZK" },
          hiddenLimit: HIDDEN_LIMIT,
        });
        assert.ok(!res.isError, JSON.stringify(res));
        assert.equal(res.structuredContent.intent.language, c.lang, "the statement's language");
        const email = `app-${c.lang}-${randomToken()}@buyer.example`;
        await consentAndConfirm(smtp, res.structuredContent.consentUrl, email);
        const list = await mcp.callTool("intent_list_matches", { intentCode: res.structuredContent.intentCode });
        assert.ok(list.structuredContent.matches.length >= 2, `too few matches: ${JSON.stringify(list.structuredContent)}`);
        s.intents[c.lang] = { code: res.structuredContent.intentCode, email, nextSince: list.structuredContent.nextSince };
      });
    }

    await step("two more offers imported later: delivered to every intent after its nextSince", async () => {
      const later = ["Škoda Octavia 2.0 TDI Style (nová)", "Škoda Octavia Combi 1.5 TSI (nová)"].map((title, n) => ({
        ref: `app-later-${n}`,
        title,
        description: `${title}. Nabídka e2e testu MCP App.`,
        category: "vehicles",
        attributes: { make: "Škoda", model: "Octavia", year: 2019, fuel: "diesel" },
        price: { amount: 199000 + n * 1000, currency: "CZK" },
        area: { country: "CZ", regions: ["CZ-64"], place: "Brno" },
        seller: { name: "e2e dealer", url: "https://dealer.example/" },
        url: `https://dealer.example/app-later-${n}`,
      }));
      for (const o of later) s.byUrl.set(o.url, o);
      s.later = later.map((o) => o.title).sort();
      const file = path.join(work, "later.jsonl");
      fs.writeFileSync(file, later.map((o) => JSON.stringify(o)).join("\n") + "\n");
      const res = await isto.importOffers(file);
      assert.equal(res.code, 0, `import: exit ${res.code}\n${res.stdout}\n${res.stderr}`);
      for (const c of LANGS) {
        const i = s.intents[c.lang];
        i.matches = await waitFor(
          async () => {
            const r = await mcp.callTool("intent_list_matches", { intentCode: i.code, since: i.nextSince });
            return r.structuredContent.matches.length === 2 && r;
          },
          { timeout: 30000, what: `the later offers delivered to the ${c.lang} intent` },
        ).then(async () => (await mcp.callTool("intent_list_matches", { intentCode: i.code })).structuredContent.matches);
      }
    });

    for (const c of LANGS) {
      await step(`${c.lang}: intent_search_offers cards show the listings' titles and prices`, async () => {
        const { frame, result } = await show("intent_search_offers", { statement: "Škoda Octavia", area: "CZ-64", limit: 8 }, { locale: c.locale });
        assert.equal(await frame.getAttribute("html", "lang"), c.lang);
        assert.equal(await frame.textContent("h1"), c.offers);
        const offers = result.structuredContent.offers;
        assert.ok(offers.length >= 2, "the search found offers");
        const got = await cards(frame);
        assert.deepEqual(
          got.map((x) => [x.title, x.price, x.link]),
          offers.map((o) => {
            const listing = s.byUrl.get(o.source.url);
            assert.ok(listing, `offer ${o.source.url} is not a listing`);
            return [listing.title, price(listing.price), listing.url];
          }),
        );
        assert.ok(got.every((x) => x.why === null && !x.fresh), "search cards have no why-line or new mark");
        await page.locator("#stage").screenshot({ path: path.join(shots, `search-${c.lang}.png`) });
      });

      await step(`${c.lang}: intent_list_matches cards with the holder's why-lines; the new ones marked after nextSince`, async () => {
        const i = s.intents[c.lang];
        const { frame } = await show("intent_list_matches", { intentCode: i.code }, { locale: c.locale });
        assert.equal(await frame.textContent("h1"), c.matches);
        const got = await cards(frame);
        assert.deepEqual(
          got.map((x) => [x.title, x.price, flat(x.why)]),
          i.matches.map((m) => {
            const listing = s.byUrl.get(m.offer.source.url);
            return [listing.title, price(listing.price), flat(`${c.why} ${m.extensions.reasons.join("; ")}`)];
          }),
        );
        assert.ok(got.every((x) => !x.fresh), "nothing is new without since");
        assert.ok(i.matches[0].extensions.reasons.length >= 3, "the why-line has the criteria, the area and the price phrase");
        await page.locator("#stage").screenshot({ path: path.join(shots, `matches-${c.lang}.png`) });

        const later = await show("intent_list_matches", { intentCode: i.code, since: i.nextSince }, { locale: c.locale });
        const fresh = await cards(later.frame);
        assert.deepEqual(fresh.map((x) => x.title).sort(), s.later, "the matches after nextSince");
        assert.ok(fresh.every((x) => x.fresh), "the matches after nextSince are marked new");
        assert.equal(await later.frame.textContent(".badge"), c.fresh);
        const text = await later.frame.innerText("body");
        for (const secret of [i.code, i.email]) assert.ok(!text.includes(secret), "the view shows the code or the contact");
      });
    }

    await step("the status card of a draft: the consent button makes the host open the consentUrl", async () => {
      const before = requests.length;
      const { frame, result } = await show(
        "intent_publish_intent",
        { statement: "Hľadám Škodu Fabia", criteria: CRITERIA, area: "CZ-64", hiddenLimit: HIDDEN_LIMIT },
        { locale: "sk-SK" },
      );
      const consentUrl = result.structuredContent.consentUrl;
      assert.match(consentUrl, /\/consent\//);
      assert.equal(await frame.textContent("h1"), "Čaká na váš súhlas");
      const text = await frame.innerText("body");
      assert.match(text, /Je nastavený skrytý cenový limit/, "a price limit is set");
      assert.doesNotMatch(text, LIMIT_RE, "the status card names the hidden limit");
      const token = consentUrl.split("/").pop();
      for (const secret of [result.structuredContent.intentCode, token]) assert.ok(!text.includes(secret), "the view shows a code or token");
      await page.locator("#stage").screenshot({ path: path.join(shots, "status-draft-sk.png") });
      await frame.click("button");
      await waitFor(() => page.evaluate(() => window.istoHost.opened.length > 0), { timeout: 10000, what: "the host's open-link request" });
      assert.deepEqual(await page.evaluate(() => window.istoHost.opened), [consentUrl]);
      const view = requests.slice(before).filter((r) => !r.main);
      assert.deepEqual(view, [], "pressing the button made the view request something");
    });

    await step("the status card of an active intent: match count and cadence (en)", async () => {
      const i = s.intents.en;
      const { frame, result } = await show("intent_get_intent", { intentCode: i.code }, { locale: "en-GB" });
      assert.equal(await frame.textContent("h1"), "Your request is active");
      const text = flat(await frame.innerText("body"));
      assert.equal(result.structuredContent.view.cadence, "as_they_come");
      assert.match(text, new RegExp(`Offers delivered ${result.structuredContent.intent.extensions.matchCount}\\b`));
      assert.match(text, /E-mails as they come/);
      assert.match(text, /The link to your results page is in our e-mails\./);
      assert.doesNotMatch(text, LIMIT_RE);
      assert.ok(!text.includes(i.code) && !text.includes(i.email));
      await page.locator("#stage").screenshot({ path: path.join(shots, "status-active-en.png") });
    });

    await step("the view makes no request of its own (Chromium's request log)", async () => {
      const ofView = requests.filter((r) => !r.main);
      assert.deepEqual(ofView, [], "requests made by the view's frame");
      const elsewhere = requests.filter((r) => !r.url.startsWith(host.origin));
      assert.deepEqual(elsewhere, [], "requests to another origin than the host page's");
      assert.ok(requests.some((r) => r.url === `${host.origin}/mcp`), "the log holds the host's own MCP requests");
    });

    const cases = [
      ["search", "intent_search_offers", { statement: "Škoda Octavia", area: "CZ-64", limit: 5 }],
      ["matches", "intent_list_matches", { intentCode: s.intents.cs?.code }],
      ["draft", "intent_publish_intent", { statement: "Hledám Škodu Fabia", criteria: CRITERIA, area: "CZ-64", hiddenLimit: HIDDEN_LIMIT }],
      ["active", "intent_get_intent", { intentCode: s.intents.cs?.code }],
    ];
    for (const theme of ["light", "dark"]) {
      await step(`axe-core finds no violation at 320 px, ${theme}: cards and status cards`, async () => {
        await page.emulateMedia({ colorScheme: theme });
        for (const [name, tool, args] of cases) {
          const { frame } = await show(tool, args, { locale: "cs-CZ", theme, width: 320 });
          assert.equal(await frame.getAttribute("html", "data-theme"), theme);
          await frame.evaluate(axeSource);
          const res = await frame.evaluate((tags) => window.axe.run(document, { runOnly: { type: "tag", values: tags } }), AXE_TAGS);
          const found = res.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
          assert.deepEqual(found, [], `${name}, ${theme}`);
          const sideways = await frame.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
          assert.equal(sideways, false, `${name}, ${theme}: the view scrolls sideways at 320 px`);
          await page.locator("#stage").screenshot({ path: path.join(shots, `${name}-${theme}-320.png`) });
        }
      });
    }
  }),
);
