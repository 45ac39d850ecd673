// Issue 5, end to end: a registered seller's agent — the official MCP TypeScript SDK
// client with an OAuthClientProvider — replies to a pseudonymous intent on /mcp/seller,
// and the buyer's intent_list_matches on /mcp shows the reply.
//
// * the operator registers the seller with `isto admin seller add` while the server runs
//   (through the admin socket);
// * a buyer's agent publishes a pseudonymous intent with a hidden limit on /mcp; the
//   person consents on the consent page and confirms from the e-mail → active;
// * the seller signs in with a one-time e-mail link (its account has no password); the
//   SDK connects to /mcp/seller (401 → DCR → authorize → Allow by the signed-in seller →
//   token for the resource <public>/mcp/seller, scopes offers demand);
// * intent_list_open_intents shows the intent under a pseudonym and the seller's own
//   handle (never the intent id), without contact, hidden limit or hasHiddenLimit;
// * two replies, one above and one below the hidden limit, get answers of the same
//   shape; only the one below reaches the buyer's intent_list_matches, as a reply;
// * the token-free /mcp has no seller tools, and the seller's token is refused on
//   /mcp/buyer.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import test from "node:test";

import {
  connectMcp,
  resultText,
  waitFor,
  withIsto,
} from "./lib/harness.mjs";
import {
  bearerParams,
  consentAndConfirm,
  initializeWith,
  sdkAuthorize,
  signInWithLink,
  writeJsonl,
} from "./lib/seller.mjs";
import { stepper } from "./lib/steps.mjs";

const SELLER_NAME = "Auto Test s.r.o.";
const SELLER_EMAIL = "seller@example.test";
const BUYER_EMAIL = "buyer-seller-e2e@example.test";
const STATEMENT = "Hľadám Škoda Octavia combi";
const REGION = "SK-BL";
const HIDDEN_LIMIT = 12000;
const LIMIT_RE = /12[\s\u00a0\u202f.,']?000/;

const SELLER_TOOLS = ["intent_submit_offer", "intent_list_open_intents", "intent_demand_summary", "intent_search_offers"];

/** Catalogue rows that do not fit the intent (other model; other region). */
function nonMatching() {
  const row = (ref, title, model, amount, region, place) => ({
    ref,
    title,
    description: `${title}. Testovacia ponuka pre e2e test isto.`,
    category: "vehicles",
    attributes: { make: "Škoda", model, year: 2016, mileageKm: 150000, fuel: "diesel" },
    price: { amount, currency: "EUR" },
    area: { country: "SK", regions: [region], place },
    seller: { name: "e2e catalogue dealer", url: "https://dealer.example/" },
    url: `https://dealer.example/${ref}`,
  });
  return [
    row("e2e-fabia-bl", "Škoda Fabia 1.0 TSI (e2e catalogue)", "Fabia", 8000, "SK-BL", "Bratislava"),
    row("e2e-octavia-ki", "Škoda Octavia 1.6 TDI (e2e catalogue, Košice)", "Octavia", 9000, "SK-KI", "Košice"),
  ];
}

/** A reply to the intent the seller knows as `handle` at `amount` EUR. */
function reply(handle, amount, tag) {
  return {
    source: { kind: "reply" },
    inReplyTo: handle,
    title: `Škoda Octavia Combi 2.0 TDI (${tag})`,
    description: `Odpoveď predajcu na zámer kupujúceho (${tag}).`,
    category: "vehicles",
    attributes: { make: "Škoda", model: "Octavia", body: "combi", fuel: "diesel", year: 2017, mileageKm: 140000 },
    price: { amount, currency: "EUR" },
    area: REGION,
    url: `https://auto-test.example/octavia-${tag}`,
  };
}

/**
 * A tool call through the SDK (which also checks structuredContent against the tool's
 * outputSchema once listTools has run); JSON-RPC errors come back as {rpcError}.
 */
async function call(client, name, args) {
  try {
    const res = await client.callTool({ name, arguments: args });
    return { res, text: resultText(res), isError: res.isError === true };
  } catch (e) {
    return { res: null, rpcError: e, text: `${e.message} ${JSON.stringify(e.data ?? "")}`, isError: true };
  }
}

test("the SDK as a seller replies to a pseudonymous intent; the buyer's list_matches shows it", { timeout: 90000 }, (t) => withIsto(t, { prefix: "isto-seller-" }, async (env) => {
  const { work, smtp, isto } = env;
  const closers = [];
  env.defer(async () => {
    for (const c of closers) await c.close().catch(() => {});
  });

  const base = isto.baseUrl;
  const sellerUrl = `${base}/mcp/seller`;
  const buyerUrl = `${base}/mcp/buyer`;
  const step = stepper(t);
  const s = {};

  // ---------------------------------------------------------------------------
  await step("catalogue: two offers that do not fit the intent are imported", async () => {
    const res = await isto.importOffers(writeJsonl(work, "catalogue.jsonl", nonMatching()));
    assert.equal(res.code, 0, `import: exit ${res.code}\n${res.stdout}\n${res.stderr}`);
  });

  await step("isto admin seller add (server running, via the admin socket) → exit 0", async () => {
    const res = await isto.run([
      "admin", "seller", "add",
      "--name", SELLER_NAME,
      "--email", SELLER_EMAIL,
      "--category", "vehicles",
      "--region", REGION,
      "--json",
    ]);
    assert.equal(res.code, 0, `seller add: exit ${res.code}\n${res.stdout}\n${res.stderr}`);
    const out = JSON.parse(res.stdout);
    const seller = out.seller ?? out.added?.seller;
    assert.ok(seller, `no seller in the output: ${res.stdout}`);
    assert.equal(seller.name, SELLER_NAME);
    assert.equal(seller.email, SELLER_EMAIL);
    assert.match(seller.accountId, /^acc_/);
    assert.match(seller.sellerId, /^sel_/);
    assert.deepEqual(seller.categories, ["vehicles"]);
    assert.deepEqual(seller.regions, [REGION]);
    assert.equal(seller.disabled, false);
    s.seller = seller;
  });

  // ---------------------------------------------------------------------------
  await step("buyer on /mcp: publish a pseudonymous intent with a hidden limit, consent, confirm → active", async () => {
    const buyer = await connectMcp(isto.mcpUrl, { name: "isto-e2e-buyer-agent" });
    closers.push(buyer);
    await buyer.listTools();
    const pub = await call(buyer.client, "intent_publish_intent", {
      statement: STATEMENT,
      criteria: { category: "vehicles", make: "Škoda", model: "Octavia" },
      area: REGION,
      budget: { max: 15000, currency: "EUR" },
      hiddenLimit: HIDDEN_LIMIT,
      visibility: "pseudonymous",
    });
    assert.equal(pub.isError, false, `publish failed: ${pub.text}`);
    const sc = pub.res.structuredContent;
    assert.equal(sc.intent.status, "awaiting_consent", pub.text);
    assert.equal(sc.intent.visibility, "pseudonymous", pub.text);
    assert.ok(sc.intentCode && sc.consentUrl, pub.text);
    s.buyer = buyer;
    s.intentId = sc.intent.id;
    s.intentCode = sc.intentCode;
    await consentAndConfirm(smtp, sc.consentUrl, BUYER_EMAIL);
    await waitFor(
      async () => {
        const g = await call(buyer.client, "intent_get_intent", { intentCode: s.intentCode });
        return g.res?.structuredContent?.intent?.status === "active";
      },
      { timeout: 10000, what: "the intent to become active" },
    );
  });

  // ---------------------------------------------------------------------------
  await step("seller signs in with a one-time e-mail link", async (st) => {
    const signin = await signInWithLink(isto, smtp, SELLER_EMAIL);
    st.diagnostic(signin.steps.join("; "));
    s.sellerBrowser = signin.browser;
  });

  await step("SDK OAuthClientProvider → /mcp/seller: DCR, authorize, Allow, token for <public>/mcp/seller", async (st) => {
    const a = await sdkAuthorize(sellerUrl, s.sellerBrowser);
    closers.push(a.client);
    st.diagnostic(`person: ${a.person.steps.join("; ")}`);
    assert.equal(a.provider.registrations, 1, "the SDK did not register the client exactly once");
    const url = a.authorizationUrl;
    assert.equal(`${url.origin}${url.pathname}`, `${base}/oauth/authorize`);
    assert.equal(url.searchParams.get("resource"), sellerUrl, `resource parameter: ${url.href}`);
    assert.deepEqual((url.searchParams.get("scope") ?? "").split(" ").sort(), ["demand", "offers"], url.href);
    assert.ok(
      !a.person.steps.some((x) => x.startsWith("POST /signin")),
      `the signed-in seller was asked to sign in again: ${a.person.steps.join("; ")}`,
    );
    assert.deepEqual(a.redirect.all("iss"), [base]);
    assert.deepEqual(a.redirect.all("state"), [a.provider.lastState]);
    assert.equal(a.tokens.token_type.toLowerCase(), "bearer");
    assert.deepEqual(String(a.tokens.scope ?? "").split(" ").sort(), ["demand", "offers"], `token scope: ${a.tokens.scope}`);
    // The token is bound to the seller resource: it works on /mcp/seller (raw check).
    const raw = await initializeWith(sellerUrl, a.tokens.access_token);
    assert.equal(raw.status, 200, `/mcp/seller refused the seller's token: ${raw.status} ${raw.body.slice(0, 300)}`);
    s.sellerClient = a.client;
    s.sellerToken = a.tokens.access_token;
  });

  await step("listTools on /mcp/seller shows the seller tools", async () => {
    const names = (await s.sellerClient.listTools()).tools.map((x) => x.name);
    for (const name of SELLER_TOOLS) assert.ok(names.includes(name), `tools/list of /mcp/seller lacks ${name}: ${names.join(", ")}`);
    for (const name of ["intent_publish_intent", "intent_list_matches", "intent_get_intent"]) {
      assert.ok(!names.includes(name), `/mcp/seller offers the buyer tool ${name}`);
    }
  });

  // ---------------------------------------------------------------------------
  await step("intent_list_open_intents {} → the intent under a pseudonym, no contact or hidden limit", async () => {
    const out = await call(s.sellerClient, "intent_list_open_intents", {});
    assert.equal(out.isError, false, `list_open_intents failed: ${out.text}`);
    const intents = out.res.structuredContent.intents;
    assert.ok(Array.isArray(intents), out.text);
    const mine = intents.find((i) => i.statement === STATEMENT);
    assert.ok(mine, `the buyer's intent ${s.intentId} is not listed: ${out.text}`);
    assert.match(mine.id ?? "", /^hdl_/, `the seller's handle: ${mine.id}`);
    assert.notEqual(mine.id, s.intentId);
    assert.equal(intents.length, 1, `expected only the buyer's intent: ${out.text}`);
    assert.match(mine.pseudonym ?? "", /^buyer-\S+$/, `pseudonym: ${mine.pseudonym}`);
    assert.equal(mine.statement, STATEMENT);
    assert.equal(mine.category, "vehicles");
    assert.equal(mine.criteria?.model, "Octavia", JSON.stringify(mine.criteria));
    assert.deepEqual(mine.area?.regions, [REGION]);
    assert.ok("nextSince" in out.res.structuredContent, out.text);
    const json = JSON.stringify(out.res);
    assert.ok(!json.toLowerCase().includes(BUYER_EMAIL), "the buyer's e-mail is in the seller's view");
    assert.ok(!json.includes("@"), `an e-mail-like string is in the seller's view: ${json}`);
    assert.ok(!json.includes(String(HIDDEN_LIMIT)), `the hidden limit value is in the seller's view: ${json}`);
    assert.doesNotMatch(json, LIMIT_RE, "the hidden limit value is in the seller's view");
    assert.ok(!json.includes("hasHiddenLimit"), `hasHiddenLimit is in the seller's view: ${json}`);
    assert.ok(!/hiddenLimit/i.test(json), `a hiddenLimit field is in the seller's view: ${json}`);
    assert.ok(!json.includes(s.intentCode), "the intentCode is in the seller's view");
    assert.ok(!json.includes(s.intentId.slice(4)), `the intent id is in the seller's view: ${json}`);
    assert.match(mine.validUntil, /:00Z$/, `validUntil to the minute: ${mine.validUntil}`);
    s.pseudonym = mine.pseudonym;
    s.handle = mine.id;
  });

  // ---------------------------------------------------------------------------
  await step("intent_submit_offer: 13000 EUR (above the hidden limit) and 11000 EUR (below) → same answer shape", async () => {
    const byId = await call(s.sellerClient, "intent_submit_offer", reply(s.intentId, 13000, "by-id"));
    assert.equal(byId.res?.structuredContent?.accepted, false, `the intent id is no handle: ${byId.text}`);
    const above = await call(s.sellerClient, "intent_submit_offer", reply(s.handle, 13000, "above"));
    assert.equal(above.isError, false, `submit (13000) failed: ${above.text}`);
    const below = await call(s.sellerClient, "intent_submit_offer", reply(s.handle, 11000, "below"));
    assert.equal(below.isError, false, `submit (11000) failed: ${below.text}`);
    for (const [what, r] of [["13000", above], ["11000", below]]) {
      const sc = r.res.structuredContent;
      assert.equal(sc.accepted, true, `${what}: ${r.text}`);
      assert.match(sc.offerId ?? "", /^off_/, `${what}: ${r.text}`);
      assert.ok(!("reason" in sc), `${what}: a reason on an accepted reply: ${r.text}`);
      assert.ok(!r.text.includes(String(HIDDEN_LIMIT)) && !LIMIT_RE.test(r.text), `${what}: the answer shows the hidden limit: ${r.text}`);
    }
    const shape = (r) => JSON.stringify(r.res.structuredContent, (k, v) => (k === "offerId" ? "<id>" : v));
    assert.equal(shape(above), shape(below), "the answers differ by more than the offer id");
    const contentShape = (r) => (r.res.content ?? []).map((c) => c.type).join(",");
    assert.equal(contentShape(above), contentShape(below));
    assert.equal(
      above.text.replaceAll(above.res.structuredContent.offerId, "<id>"),
      below.text.replaceAll(below.res.structuredContent.offerId, "<id>"),
      "the answers' texts differ by more than the offer id",
    );
    assert.equal(above.res.isError ?? false, below.res.isError ?? false);
    s.aboveId = above.res.structuredContent.offerId;
    s.belowId = below.res.structuredContent.offerId;
    assert.notEqual(s.aboveId, s.belowId);
  });

  await step("buyer's intent_list_matches {intentCode} → exactly the 11000 EUR reply, as a reply to the intent", async () => {
    let sc;
    await waitFor(
      async () => {
        const out = await call(s.buyer.client, "intent_list_matches", { intentCode: s.intentCode });
        assert.equal(out.isError, false, `list_matches failed: ${out.text}`);
        sc = out.res.structuredContent;
        return sc.matches.length >= 1;
      },
      { timeout: 15000, interval: 300, what: "the reply among the buyer's matches" },
    );
    // Both replies are matched after their answers, by the holder's reply tick: one
    // write transaction takes the whole queue. The reply above the hidden limit was
    // queued before the one below it, so once the one below is delivered the one above
    // was decided too (in that tick or an earlier one): it cannot come later. One more
    // read, after that state.
    {
      const out = await call(s.buyer.client, "intent_list_matches", { intentCode: s.intentCode });
      sc = out.res.structuredContent;
    }
    const offers = sc.matches.map((m) => m.offer);
    const summary = JSON.stringify(offers.map((o) => ({ id: o.id, title: o.title, price: o.price })));
    assert.ok(!offers.some((o) => o.id === s.aboveId), `the reply above the hidden limit was delivered: ${summary}`);
    assert.equal(offers.length, 1, `expected exactly the 11000 EUR reply: ${summary}`);
    const o = offers[0];
    assert.equal(o.id, s.belowId, summary);
    assert.deepEqual(o.price, { amount: 11000, currency: "EUR" });
    assert.equal(o.source?.kind, "reply", JSON.stringify(o.source));
    assert.equal(o.source?.sellerId, s.seller.sellerId, JSON.stringify(o.source));
    assert.equal(o.inReplyTo, s.intentId, `inReplyTo: ${o.inReplyTo}`);
    assert.match(o.title, /Octavia/);
    assert.equal(o.seller?.name, SELLER_NAME, JSON.stringify(o.seller));
    assert.equal(o.seller?.id, s.seller.sellerId, JSON.stringify(o.seller));
    assert.ok(
      (o.source?.url ?? o.url ?? "").includes("octavia-below"),
      `the reply's own URL is missing: ${JSON.stringify(o)}`,
    );
  });

  await step(
    "replies are not catalogue offers: intent_search_offers on /mcp does not find them",
    async () => {
      const out = await call(s.buyer.client, "intent_search_offers", { statement: "Octavia" });
      assert.equal(out.isError, false, `search failed: ${out.text}`);
      const offers = out.res.structuredContent.offers;
      assert.ok(offers.some((o) => /e2e catalogue, Košice/.test(o.title)), `the catalogue Octavia is not found: ${out.text}`);
      const ids = offers.map((o) => o.id);
      assert.ok(!ids.includes(s.aboveId) && !ids.includes(s.belowId), `a reply shows in catalogue search: ${out.text}`);
    },
    { independent: true, needs: () => s.belowId },
  );

  // ---------------------------------------------------------------------------
  await step(
    "the token-free /mcp has no seller tools (unknown tool)",
    async () => {
      const names = (await s.buyer.listTools()).tools.map((x) => x.name);
      assert.ok(!names.includes("intent_submit_offer") && !names.includes("intent_list_open_intents"), names.join(", "));
      for (const [tool, args] of [
        ["intent_submit_offer", reply(s.handle ?? s.intentId, 10000, "public")],
        ["intent_list_open_intents", {}],
      ]) {
        const out = await call(s.buyer.client, tool, args);
        assert.ok(out.rpcError, `${tool} on /mcp did not fail with a JSON-RPC error: ${out.text}`);
        assert.match(out.text, /unknown tool/i, `${tool} on /mcp: ${out.text}`);
      }
      const m = await call(s.buyer.client, "intent_list_matches", { intentCode: s.intentCode });
      assert.equal(m.res?.structuredContent?.matches?.length, 1, `the public call changed the matches: ${m.text}`);
    },
    { independent: true, needs: () => s.buyer && s.intentId },
  );

  await step(
    "the seller's token is refused on /mcp/buyer (401 invalid_token)",
    async () => {
      const res = await initializeWith(buyerUrl, s.sellerToken);
      assert.equal(res.status, 401, `/mcp/buyer answered ${res.status} to the seller's token: ${res.body.slice(0, 300)}`);
      const p = bearerParams(res.headers["www-authenticate"]);
      assert.ok(p, `no Bearer challenge: ${res.headers["www-authenticate"]}`);
      assert.equal(p.error, "invalid_token", `challenge: ${res.headers["www-authenticate"]}`);
      assert.equal(p.resource_metadata, `${base}/.well-known/oauth-protected-resource/mcp/buyer`);
    },
    { independent: true, needs: () => s.sellerToken },
  );

  await step(
    "isto's log has no buyer e-mail, hidden limit value or intentCode",
    async () => {
      const lines = (await isto.settledLog()).split("\n");
      for (const [what, secret] of Object.entries({ "buyer e-mail": BUYER_EMAIL, intentCode: s.intentCode })) {
        const hit = lines.find((l) => l.includes(secret));
        assert.ok(!hit, `isto log contains the ${what}: ${hit}`);
      }
      const hit = lines.find((l) => /hidden.?limit\D{0,20}12\D?000/i.test(l));
      assert.ok(!hit, `isto log contains the hidden limit: ${hit}`);
    },
    { independent: true, needs: () => s.intentCode },
  );
}));
