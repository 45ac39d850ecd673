// End-to-end test of the consent-link flow: catalogue import (offline and
// online), MCP tools, consent page, double opt-in by e-mail, matching against the hidden
// limit, digest e-mail, privacy of contact/limit/codes/tokens, search, withdrawal.
//
// Needs: the isto binary (ISTO_BIN or target/debug/isto), python3 with aiosmtpd, and the
// real listing files in ../shared/data (the test is skipped when they are absent).

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import test from "node:test";

import {
  buildCatalogue,
  DATA_DIR,
  dataAvailable,
  expectedMatches,
  writeJsonl,
} from "./lib/catalogue.mjs";
import {
  Browser,
  connectMcp,
  extractUrls,
  findPostForm,
  htmlText,
  importOffers,
  mailIsFor,
  randomToken,
  waitFor,
  withIsto,
} from "./lib/harness.mjs";
import { stepper } from "./lib/steps.mjs";

const STATEMENT = "Hledám Škoda Octavia, nejlépe diesel";
const AREA_NAME = "Jihomoravský kraj";
const REGION = "CZ-64";
const HIDDEN_LIMIT = 250000;
const BUDGET_MAX = 400000;
const CRITERIA = { category: "vehicles", make: "Škoda", model: "Octavia" };
const MATCH_FILTER = {
  category: "vehicles",
  attributes: { make: "Škoda", model: "Octavia" },
  regions: [REGION],
  maxPrice: HIDDEN_LIMIT,
  currency: "CZK",
};
const LIMIT_RE = /250[\s\u00a0\u202f.,']?000/;

const TOOLS = [
  "intent_publish_intent",
  "intent_get_intent",
  "intent_list_matches",
  "intent_withdraw_intent",
  "intent_search_offers",
];

function octavia(ref, title, amount, region = REGION, extra = {}) {
  return {
    ref,
    title,
    description: `${title}. Testovací nabídka pro e2e test isto.`,
    category: "vehicles",
    attributes: { make: "Škoda", model: "Octavia", year: 2015, mileageKm: 180000, fuel: "diesel", transmission: "manual" },
    price: { amount, currency: "CZK" },
    area: { country: "CZ", regions: [region], place: "Brno" },
    seller: { name: "e2e dealer", url: "https://dealer.example/" },
    url: `https://dealer.example/${ref}`,
    ...extra,
  };
}

/** Key used to compare offers returned by isto with catalogue rows. */
function offerKey(offer, byRef) {
  return byRef ? offer.extensions?.ref ?? offer.ref : `${offer.title}|${offer.price?.amount}`;
}

function sortedKeys(offers, byRef) {
  return offers.map((o) => offerKey(o, byRef)).sort();
}

/** Every property name in a JSON schema, recursively (properties, $defs, items, ...). */
function schemaPropertyNames(schema, out = []) {
  if (!schema || typeof schema !== "object") return out;
  if (Array.isArray(schema)) {
    for (const s of schema) schemaPropertyNames(s, out);
    return out;
  }
  for (const [k, v] of Object.entries(schema)) {
    if ((k === "properties" || k === "patternProperties") && v && typeof v === "object") {
      for (const [name, sub] of Object.entries(v)) {
        out.push(name);
        schemaPropertyNames(sub, out);
      }
    } else if (k === "required" && Array.isArray(v)) {
      out.push(...v.filter((x) => typeof x === "string"));
    } else if (typeof v === "object") {
      schemaPropertyNames(v, out);
    }
  }
  return out;
}

function assertSummary(res, what) {
  const out = `${res.stdout}\n${res.stderr}`;
  assert.equal(res.code, 0, `${what}: exit code ${res.code}\n${out}`);
  assert.match(out, /\d/, `${what}: expected a summary with counts, got:\n${out}`);
}

const skip = !dataAvailable() && `real listing data not found in ${DATA_DIR} (needed for the catalogue)`;

test("consent-link flow end to end", { skip, timeout: 15 * 60 * 1000 }, (t) => withIsto(t, { prefix: "isto-flow-", start: false }, async (env) => {
  const step = stepper(t);
  const { work, dataDir, smtp } = env;
  let isto = null;
  let mcp = null;
  env.defer(() => mcp?.close());

  // ----------------------------------------------------------------- state
  const s = {
    offers: [], // every offer imported, in import format
    email: `buyer-${randomToken()}@buyer.example`,
    email2: `other-${randomToken()}@buyer.example`,
    toolResults: [], // JSON of every tool result after publish (privacy check)
    holderPages: [], // {url, body} fetched as the code holder (privacy check)
  };
  const browser = new Browser();

  async function call(name, args, opts = { validate: true }) {
    const res = await mcp.callTool(name, args, opts);
    if (s.intentCode) {
      const parts = [JSON.stringify(res.structuredContent ?? null), ...(res.content ?? []).map((c) => c.text ?? JSON.stringify(c))];
      s.toolResults.push({ name, json: JSON.stringify(res), scrubbed: parts.map(scrubListingText).join("\n") });
    }
    return res;
  }
  /**
   * Remove the listings' own texts from a JSON string: a real ad may mention "250 000"
   * (kilometres, say), which is not the buyer's hidden limit.
   */
  function scrubListingText(json) {
    let out = json;
    for (const o of s.offers) {
      for (const v of [o.title, o.description, o.url]) {
        if (v && LIMIT_RE.test(v)) out = out.split(JSON.stringify(v).slice(1, -1)).join("<listing text>");
      }
    }
    return out;
  }
  async function callOk(name, args) {
    const res = await call(name, args);
    assert.ok(!res.isError, `${name} failed: ${JSON.stringify(res)}`);
    assert.ok(res.structuredContent && typeof res.structuredContent === "object", `${name}: no structuredContent`);
    return res.structuredContent;
  }
  const getIntent = async () => (await callOk("intent_get_intent", { intentCode: s.intentCode })).intent;

  // ------------------------------------------------------------- catalogue
  await step("catalogue has Octavias in the area below and above the limit, and outside the area", () => {
    const cat = buildCatalogue(work);
    s.catalogue = cat;
    s.offers.push(...cat.offers);
    const oct = expectedMatches(cat.offers, { category: "vehicles", attributes: { make: "Škoda", model: "Octavia" } });
    const inArea = oct.filter((o) => o.area.regions.includes(REGION));
    const below = inArea.filter((o) => o.price.amount <= HIDDEN_LIMIT);
    const above = inArea.filter((o) => o.price.amount > HIDDEN_LIMIT);
    const outside = oct.filter((o) => !o.area.regions.includes(REGION));
    t.diagnostic(
      `catalogue ${cat.offers.length} offers; Škoda Octavia ${oct.length}: in ${REGION} ≤${HIDDEN_LIMIT} ${below.length}, >${HIDDEN_LIMIT} ${above.length}; outside ${outside.length}`,
    );
    assert.ok(below.length > 0, "no Octavia in the area under the limit");
    assert.ok(above.length > 0, "no Octavia in the area over the limit");
    assert.ok(above.some((o) => o.price.amount <= BUDGET_MAX), "no Octavia between the hidden limit and the budget");
    assert.ok(outside.some((o) => o.price.amount <= HIDDEN_LIMIT), "no cheap Octavia outside the area");
  });

  await step("offline import (before serve) exits 0 with a summary", async () => {
    const res = await importOffers(s.catalogue.path, { dataDir, smtpPort: smtp.port });
    assertSummary(res, "offline import");
    t.diagnostic(`offline import: ${(res.stdout + res.stderr).trim().split("\n").slice(-3).join(" | ")}`);
  });

  await step("isto serve starts and answers /healthz", async () => {
    isto = await env.start();
    s.baseUrl = isto.baseUrl;
  });

  await step("online import (server running) exits 0 with a summary", async () => {
    const online = [
      octavia("e2e-online-1", "Škoda Octavia Combi 2.0 TDI Style (e2e online 1)", 199000),
      octavia("e2e-online-2", "Škoda Octavia 2.0 TDI RS (e2e online 2)", 260000),
      {
        ...octavia("e2e-online-3", "Škoda Fabia 1.0 TSI Ambition (e2e online 3)", 150000),
        attributes: { make: "Škoda", model: "Fabia", year: 2019, fuel: "petrol" },
      },
    ];
    const file = writeJsonl(work, "online.jsonl", online);
    const res = await isto.importOffers(file);
    assertSummary(res, "online import");
    t.diagnostic(`online import: ${(res.stdout + res.stderr).trim().split("\n").slice(-3).join(" | ")}`);
    s.offers.push(...online);
    s.expected = expectedMatches(s.offers, MATCH_FILTER);
    t.diagnostic(`expected matches: ${s.expected.length}`);
  });

  await step("MCP: tools/list", async () => {
    mcp = await connectMcp(isto.mcpUrl);
    const { tools } = await mcp.listTools();
    const names = tools.map((x) => x.name);
    for (const name of TOOLS) assert.ok(names.includes(name), `tool ${name} missing (have ${names.join(", ")})`);
    for (const tool of tools) {
      assert.ok(tool.outputSchema && tool.outputSchema.type === "object", `${tool.name} has no outputSchema`);
      assert.match(tool.description ?? "", /market\w*\s+aggregator/i, `${tool.name}: description must mention a market aggregator`);
    }
    const publish = tools.find((x) => x.name === "intent_publish_intent");
    const bad = schemaPropertyNames(publish.inputSchema).filter((n) => /email|e-mail|phone|contact|name/i.test(n));
    assert.deepEqual(bad, [], `publish input schema has contact-like properties: ${bad.join(", ")}`);
  });

  await step("intent_publish_intent returns a draft with intentCode and consentUrl", async () => {
    const res = await mcp.callTool(
      "intent_publish_intent",
      { statement: STATEMENT, criteria: CRITERIA, area: AREA_NAME, budget: { max: BUDGET_MAX, currency: "CZK" }, hiddenLimit: HIDDEN_LIMIT },
      { validate: true },
    );
    assert.ok(!res.isError, `publish failed: ${JSON.stringify(res)}`);
    const sc = res.structuredContent;
    const json = JSON.stringify(res);
    assert.ok(sc?.intent, `no intent in ${json}`);
    assert.equal(typeof sc.intent.id, "string");
    assert.equal(sc.intent.status, "awaiting_consent");
    assert.equal(sc.intent.hasHiddenLimit, true);
    assert.equal(sc.intent.area?.country, "CZ");
    assert.deepEqual(sc.intent.area?.regions, [REGION]);
    assert.equal(sc.intent.statement, STATEMENT);
    assert.equal(typeof sc.intentCode, "string");
    assert.ok(sc.intentCode.length >= 22, `intentCode too short for 128 bits: ${sc.intentCode.length} chars`);
    assert.equal(typeof sc.consentUrl, "string");
    assert.ok(sc.consentUrl.startsWith(`${isto.baseUrl}/`), `consentUrl ${sc.consentUrl} is not on ${isto.baseUrl}`);
    const exp = Date.parse(sc.expiresAt);
    assert.ok(Number.isFinite(exp), `expiresAt ${sc.expiresAt} is not a time`);
    assert.ok(exp > Date.now() + 3600e3 && exp <= Date.now() + 25 * 3600e3, `expiresAt ${sc.expiresAt} not ~24 h ahead`);
    assert.ok(!/hiddenLimit"\s*:/.test(json), "publish result has a hiddenLimit field");
    assert.doesNotMatch(json, LIMIT_RE, "publish result contains the hidden limit value");
    s.intentId = sc.intent.id;
    s.intentCode = sc.intentCode;
    s.consentUrl = sc.consentUrl;
    s.consentToken = new URL(sc.consentUrl).pathname.split("/").filter(Boolean).pop();
    assert.ok(!sc.consentUrl.includes(sc.intentCode), "consentUrl must not carry the intentCode");
  });

  await step("consent page has a POST form with an email field", async () => {
    const page = await browser.get(s.consentUrl);
    assert.equal(page.status, 200, `GET consentUrl: ${page.status}`);
    const form = findPostForm(page.body, page.url, { withInput: "email" });
    assert.ok(form, `consent page has no POST form with an email input:\n${htmlText(page.body).slice(0, 1500)}`);
    s.consentPage = page;
    s.consentForm = form;
  });

  await step("consent page shows the statement, says a limit is set, hides its value", () => {
    const page = s.consentPage;
    const text = htmlText(page.body);
    assert.ok(text.includes(STATEMENT), `consent page does not show the statement:\n${text.slice(0, 1500)}`);
    assert.match(text, /limit/i, "consent page does not say that a limit is set");
    assert.doesNotMatch(text, LIMIT_RE, "consent page shows the hidden limit");
    assert.doesNotMatch(page.body, LIMIT_RE, "consent page HTML contains the hidden limit");
  }, { independent: true, needs: () => s.consentPage });

  await step("submitting the consent form moves the intent to awaiting_email_confirmation", async () => {
    const res = await browser.postForm(s.consentForm, s.consentPage.url, { email: s.email, accept: "yes" });
    assert.ok(res.status >= 200 && res.status < 300, `consent POST answered ${res.status}:\n${htmlText(res.body).slice(0, 800)}`);
    const intent = await getIntent();
    assert.equal(intent.status, "awaiting_email_confirmation");
  });

  await step("a second consent submission is refused (first come)", async () => {
    const other = new Browser();
    // The same form (same hidden fields) submitted again with another address; first with
    // the original browser session, then with a fresh one that loads the page itself.
    const again = await browser.postForm(s.consentForm, s.consentPage.url, { email: s.email2, accept: "yes" });
    const refused = (r) => r.status === 409 || /already|taken|převz|obsazen|již|uz\b|už/i.test(htmlText(r.body));
    assert.ok(refused(again), `second consent POST not refused: ${again.status}\n${htmlText(again.body).slice(0, 800)}`);
    const page = await other.get(s.consentUrl);
    const form = findPostForm(page.body, page.url, { withInput: "email" });
    if (form) {
      const third = await other.postForm(form, page.url, { email: s.email2, accept: "yes" });
      assert.ok(refused(third), `consent POST from a new session not refused: ${third.status}`);
    }
    const intent = await getIntent();
    assert.equal(intent.status, "awaiting_email_confirmation");
  });

  await step("a confirmation e-mail with a /confirm/ link arrives", async () => {
    const msg = await smtp.waitForMessage((m) => mailIsFor(m, s.email), { timeout: 30000, what: `confirmation e-mail to ${s.email}` });
    s.confirmMail = msg;
    t.diagnostic(`confirmation subject: ${msg.subject}`);
    const urls = extractUrls(msg.text ?? "").concat(extractUrls(msg.html ?? ""));
    const link = urls.find((u) => u.includes("/confirm/"));
    assert.ok(link, `no /confirm/ link in the mail:\n${msg.text ?? msg.html}`);
    assert.ok(link.startsWith(`${isto.baseUrl}/`), `confirm link ${link} not on ${isto.baseUrl}`);
    s.confirmUrl = link;
    s.confirmToken = new URL(link).pathname.split("/").filter(Boolean).pop();
    assert.ok(s.confirmToken.length >= 16, `confirmation token looks too short: ${s.confirmToken}`);
  });

  await step("confirmation e-mail: UTF-8 subject, List-Unsubscribe, one-click", () => {
    const msg = s.confirmMail;
    assert.ok(msg.subject && msg.subject.trim().length > 0, "empty subject");
    const raw = msg.rawSubject ?? "";
    assert.ok(/^[\x00-\x7f]*$/.test(raw), `raw Subject header is not 7-bit (not RFC 2047 encoded): ${raw}`);
    for (const m of raw.matchAll(/=\?([^?]+)\?[bq]\?/gi)) {
      assert.match(m[1], /^utf-?8$/i, `encoded-word charset ${m[1]} is not UTF-8`);
    }
    const lu = (msg.headers["list-unsubscribe"] ?? []).join(",");
    assert.match(lu, /<https?:\/\/[^>]+>/, `List-Unsubscribe missing or without an http(s) URL: ${lu}`);
    assert.deepEqual(msg.headers["list-unsubscribe-post"], ["List-Unsubscribe=One-Click"]);
  }, { independent: true, needs: () => s.confirmMail });

  await step("GET of the confirmation link shows a Confirm form and does not confirm", async () => {
    const page = await browser.get(s.confirmUrl);
    assert.equal(page.status, 200, `GET confirm link: ${page.status}`);
    const form = findPostForm(page.body, page.url, { actionPattern: "/confirm", prefer: true });
    assert.ok(form, "confirmation page has no POST form");
    s.confirmPage = page;
    s.confirmForm = form;
    assert.equal((await getIntent()).status, "awaiting_email_confirmation", "GET changed the state");
    // a second GET (mail scanners) still does not confirm
    await browser.get(s.confirmUrl);
    assert.equal((await getIntent()).status, "awaiting_email_confirmation", "second GET changed the state");
  });

  await step("POST of the Confirm form makes the intent active", async () => {
    const res = await browser.postForm(s.confirmForm, s.confirmPage.url);
    assert.ok(res.status >= 200 && res.status < 300, `confirm POST answered ${res.status}`);
    await waitFor(async () => (await getIntent()).status === "active", { timeout: 10000, what: "status active" });
  });

  await step("intent_list_matches returns exactly the catalogue rows under the hidden limit in the area", async () => {
    const expected = s.expected;
    let sc;
    await waitFor(
      async () => {
        sc = await callOk("intent_list_matches", { intentCode: s.intentCode, limit: 100 });
        return Array.isArray(sc.matches) && sc.matches.length >= expected.length;
      },
      { timeout: 30000, interval: 500, what: `${expected.length} matches` },
    ).catch((e) => {
      throw new Error(`${e.message}; got ${sc?.matches?.length} matches`);
    });
    assert.ok("nextSince" in sc, "list_matches result has no nextSince");
    const offers = sc.matches.map((m) => m.offer);
    for (const m of sc.matches) {
      assert.ok(m.deliveredAt && Number.isFinite(Date.parse(m.deliveredAt)), `bad deliveredAt ${m.deliveredAt}`);
      assert.equal(typeof m.offer?.id, "string", "match without offer.id");
      assert.ok(m.offer.price.amount <= HIDDEN_LIMIT, `offer above the hidden limit delivered: ${m.offer.title} ${m.offer.price.amount}`);
      assert.equal(m.offer.price.currency, "CZK");
      assert.ok(m.offer.area?.regions?.includes(REGION), `offer outside ${REGION}: ${JSON.stringify(m.offer.area)}`);
    }
    const byRef = offers.length > 0 && offers.every((o) => typeof (o.extensions?.ref ?? o.ref) === "string");
    t.diagnostic(`comparing ${offers.length} matches with ${expected.length} expected by ${byRef ? "ref" : "title+price"}`);
    const got = sortedKeys(offers, byRef);
    const want = sortedKeys(expected, byRef);
    const missing = want.filter((k) => !got.includes(k));
    const extra = got.filter((k) => !want.includes(k));
    assert.deepEqual(got, want, `matches differ from the catalogue; missing: ${JSON.stringify(missing)}; unexpected: ${JSON.stringify(extra)}`);
    s.matches = sc.matches;
    s.matchKeys = got;
    s.byRef = byRef;
  });

  await step("a digest e-mail lists the matches and carries the withdraw link", async () => {
    const titles = s.matches.map((m) => m.offer.title);
    const bodyOf = (m) => `${m.text ?? ""}\n${m.html ? htmlText(m.html) : ""}`;
    const msg = await smtp.waitForMessage(
      (m) => mailIsFor(m, s.email) && m.key !== s.confirmMail.key && titles.some((x) => bodyOf(m).includes(x)),
      { timeout: 30000, what: `digest e-mail to ${s.email}` },
    );
    s.digestMail = msg;
    const body = bodyOf(msg);
    const listed = titles.filter((x) => body.includes(x)).length;
    t.diagnostic(`digest subject: ${msg.subject}; lists ${listed} of ${titles.length} match titles`);
    const holderLinks = extractUrls(`${msg.text ?? ""}\n${msg.html ?? ""}`).filter(
      (u) => u.startsWith(`${isto.baseUrl}/`) && !u.includes("/confirm/"),
    );
    const withdraw = holderLinks.find((u) => /withdraw|unsubscribe|odhl|zrus|zruš/i.test(u)) ?? holderLinks[0];
    assert.ok(withdraw, `digest has no withdraw link on ${isto.baseUrl}:\n${msg.text ?? msg.html}`);
    assert.match((msg.headers["list-unsubscribe"] ?? []).join(","), /<https?:\/\/[^>]+>/, "digest has no List-Unsubscribe");
    // Opening the withdraw link (GET) must not withdraw.
    const page = await new Browser().get(withdraw);
    assert.ok(page.status < 400, `GET withdraw link: ${page.status}`);
    assert.equal((await getIntent()).status, "active", "GET of the withdraw link changed the state");
  });

  await step("privacy: no e-mail, limit, code or token in tool results and holder pages", async () => {
    // Pages the code holder can reach: the consent URL (after consent) and any
    // holder-domain URL that a tool result handed out.
    const urls = new Set([s.consentUrl]);
    for (const r of s.toolResults) {
      for (const u of extractUrls(r.json)) if (u.startsWith(`${isto.baseUrl}/`)) urls.add(u);
    }
    for (const u of urls) {
      const page = await new Browser().get(u);
      s.holderPages.push({ url: u, body: page.body });
    }
    const secrets = {
      "buyer e-mail": s.email,
      "hidden limit": String(HIDDEN_LIMIT),
      intentCode: s.intentCode,
      "consent token": s.consentToken,
      "confirmation token": s.confirmToken,
    };
    for (const r of s.toolResults) {
      for (const [what, secret] of Object.entries(secrets)) {
        assert.ok(!r.scrubbed.includes(secret), `${r.name} result contains the ${what}`);
      }
      const m = r.scrubbed.match(new RegExp(`.{0,80}${LIMIT_RE.source}.{0,80}`));
      assert.ok(!m, `${r.name} result contains the hidden limit: …${m?.[0]}…`);
      assert.ok(!r.json.includes(s.email2), `${r.name} result contains the second e-mail`);
    }
    for (const p of s.holderPages) {
      for (const [what, secret] of Object.entries({ "buyer e-mail": s.email, "confirmation token": s.confirmToken, intentCode: s.intentCode })) {
        assert.ok(!p.body.includes(secret), `page ${p.url} contains the ${what}`);
      }
      let text = htmlText(p.body);
      for (const o of s.offers) for (const v of [o.title, o.description]) if (v && LIMIT_RE.test(v)) text = text.split(v).join(" ");
      assert.doesNotMatch(text, LIMIT_RE, `page ${p.url} shows the hidden limit`);
    }
    t.diagnostic(`checked ${s.toolResults.length} tool results and ${s.holderPages.length} holder pages`);
  }, { independent: true, needs: () => s.intentCode && s.consentToken });

  await step("intent_search_offers: plain and with area", async () => {
    const a = await callOk("intent_search_offers", { statement: "octavia" });
    assert.ok(Array.isArray(a.offers) && a.offers.length > 0, "search 'octavia' found nothing");
    assert.ok(a.offers.some((o) => /octavia/i.test(o.title)), "search 'octavia' returned no Octavia");
    const b = await callOk("intent_search_offers", { statement: "skoda octavia", area: REGION });
    assert.ok(Array.isArray(b.offers) && b.offers.length > 0, "search 'skoda octavia' in CZ-64 found nothing");
    for (const o of b.offers) {
      assert.ok(o.area?.regions?.includes(REGION), `search with area ${REGION} returned ${o.title} in ${JSON.stringify(o.area)}`);
    }
  }, { independent: true, needs: () => mcp });

  await step("withdraw: status withdrawn, new matching offers are not delivered", async () => {
    const before = smtp.messages().filter((m) => mailIsFor(m, s.email)).map((m) => m.key);
    const w = await callOk("intent_withdraw_intent", { intentCode: s.intentCode });
    assert.equal(w.status, "withdrawn");
    assert.equal((await getIntent()).status, "withdrawn");
    const late = [1, 2, 3].map((i) => octavia(`e2e-late-${i}`, `Škoda Octavia 1.6 TDI Ambition (e2e late ${i})`, 100000));
    const res = await isto.importOffers(writeJsonl(work, "late.jsonl", late));
    assertSummary(res, "late import");
    // Poll for a few seconds: the set must stay exactly the same and no digest may come.
    const deadline = Date.now() + 5000;
    const lateTitles = late.map((o) => o.title);
    const matchTitles = s.matches.map((m) => m.offer.title);
    while (Date.now() < deadline) {
      const sc = await callOk("intent_list_matches", { intentCode: s.intentCode, limit: 100 });
      assert.deepEqual(sortedKeys(sc.matches.map((m) => m.offer), s.byRef), s.matchKeys, "matches changed after withdrawal");
      const fresh = smtp.messages().filter((m) => mailIsFor(m, s.email) && !before.includes(m.key));
      for (const m of fresh) {
        const body = `${m.text ?? ""}\n${m.html ?? ""}`;
        assert.ok(
          ![...lateTitles, ...matchTitles].some((x) => body.includes(x)),
          `a digest arrived after withdrawal: ${m.subject}`,
        );
      }
      await new Promise((r) => setTimeout(r, 500)); // the watch window's pace (5 s under test)
    }
  });

  await step("the second address never received mail", () => {
    const to2 = smtp.messages().filter((m) => mailIsFor(m, s.email2));
    assert.equal(to2.length, 0, `mail sent to the second submitter: ${to2.map((m) => m.subject).join("; ")}`);
  }, { independent: true, needs: () => s.consentForm });

  await step("isto's log has no e-mail, limit, code, token or statement", async () => {
    const secrets = {
      "buyer e-mail": s.email,
      "second e-mail": s.email2,
      "hidden limit": String(HIDDEN_LIMIT),
      intentCode: s.intentCode,
      "consent token": s.consentToken,
      "confirmation token": s.confirmToken,
      statement: STATEMENT,
    };
    const lines = (await isto.settledLog()).split("\n");
    for (const [what, secret] of Object.entries(secrets)) {
      if (!secret) continue;
      const hit = lines.find((l) => l.includes(secret));
      assert.ok(!hit, `isto log contains the ${what}: ${hit}`);
    }
    t.diagnostic(`checked ${lines.length} log lines (${isto.logFile})`);
  }, { independent: true, needs: () => isto && s.intentCode });
}));
