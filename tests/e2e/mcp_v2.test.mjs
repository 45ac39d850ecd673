// MCP revision 2026-07-28 end to end with the official TypeScript SDK
// v2 client (`@modelcontextprotocol/client`), pinned to 2026-07-28: stateless (no
// initialize, no Mcp-Session-Id), server/discover first, `_meta` on every request,
// Mcp-Method / Mcp-Name headers, the cacheable tools/list. Every request and response is
// recorded by the client's `fetch` and checked.
//
// * the consent-link flow on /mcp: publish → the consent page POSTed like a browser →
//   the confirmation e-mail from aiosmtpd → Confirm → get (active) / list_matches (the
//   imported offer under the hidden limit) / withdraw;
// * the OAuth flow on /mcp/buyer: 401 → registration → the person signs in (sign-up
//   browser) and presses Allow → finishAuth → tools with the token;
// * the OAuth flow on /mcp/seller: a seller added with `isto admin seller add` signs in
//   with a one-time e-mail link and presses Allow → finishAuth → the seller tools
//   (intent_list_open_intents shows a pseudonymous intent without contact or hidden
//   limit; intent_submit_offer reaches the buyer); a buyer's token is refused there, raw
//   and through the SDK (whose new authorization the buyer cannot allow);
// * the server fixes for MCP 2026-07-28 with raw HTTP, for both revisions: tools/list
//   the same bytes on every call and cacheable by anyone on 2026-07-28; clients that
//   accept only application/json (or */*, or send no Accept) get JSON, not 406; a newer
//   protocol version is negotiated down (initialize) or answered with the supported
//   versions (-32022, the 2026-07-28 negotiation), never refused outright — also an
//   initialize whose MCP-Protocol-Version header names the newer version too (MCP
//   2025-11-25 lifecycle, "Version Negotiation": the header belongs to the requests after
//   initialization), raw on /mcp, /mcp/buyer and /mcp/seller with their tokens, and
//   through the v1 SDK client made to speak as a client one revision ahead;
//
// The v2 package declares Node ≥ 20; the tests skip only when Node is older than that.

import assert from "node:assert/strict";
import test from "node:test";

import { Client, StreamableHTTPClientTransport, UnauthorizedError } from "@modelcontextprotocol/client";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { freePort, initializeBody, waitFor, withIsto } from "./lib/harness.mjs";
import { actAsPerson, buyerWithToken, MemoryOAuthProvider, signUpBuyer } from "./lib/oauth.mjs";
import { addSeller, bearerParams, consentAndConfirm, octavia, signInWithLink, writeJsonl } from "./lib/seller.mjs";
import { stepper } from "./lib/steps.mjs";

const V2 = "2026-07-28";
const NODE_MAJOR = Number(process.versions.node.split(".")[0]);
const skip = NODE_MAJOR < 20 && `@modelcontextprotocol/client needs Node >= 20; this is Node ${process.versions.node}`;

const PUBLIC_TOOLS = [
  "intent_publish_intent",
  "intent_get_intent",
  "intent_list_matches",
  "intent_withdraw_intent",
  "intent_search_offers",
  "intent_demand_summary",
];

const HIDDEN_LIMIT = 250000;

/**
 * The in-memory OAuth provider of lib/oauth.mjs with the v2 SDK's discovery state
 * (SEP-2352: the authorization server the flow started with, checked on its callback).
 */
class V2OAuthProvider extends MemoryOAuthProvider {
  saveDiscoveryState(state) {
    this._discovery = state;
  }

  discoveryState() {
    return this._discovery;
  }
}

/**
 * A V2OAuthProvider for a public client on a fresh 127.0.0.1 callback whose
 * redirectToAuthorization plays the person signed in in `browser` (Allow); the outcome
 * of that part ({kind, location, steps, …} of actAsPerson) lands in `seen.person`.
 */
async function v2Provider(browser, seen, clientName) {
  const provider = new V2OAuthProvider({
    redirectUrl: `http://127.0.0.1:${await freePort()}/callback`,
    clientMetadata: {
      client_name: clientName,
      redirect_uris: [],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    },
    onRedirect: async (authUrl) => {
      seen.person = await actAsPerson(browser, authUrl.href, {});
    },
  });
  provider.clientMetadata.redirect_uris.push(String(provider.redirectUrl));
  return provider;
}

/** A fetch that records every request's method and headers and every response's status and headers. */
function recordingFetch() {
  const log = [];
  const f = async (url, init = {}) => {
    const res = await fetch(url, init);
    let body = null;
    try {
      body = typeof init.body === "string" ? JSON.parse(init.body) : null;
    } catch {
      /* not JSON */
    }
    log.push({
      url: String(url),
      method: init.method ?? "GET",
      headers: Object.fromEntries(new Headers(init.headers)),
      body,
      status: res.status,
      resHeaders: Object.fromEntries(res.headers),
    });
    return res;
  };
  return { fetch: f, log };
}

/** A v2 SDK client pinned to 2026-07-28 on `url`. */
async function connectV2(url, { fetch, authProvider } = {}) {
  const client = new Client({ name: "isto-e2e-v2", version: "0.0.0" }, { versionNegotiation: { mode: { pin: V2 } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch, authProvider }));
  return client;
}

/** No token but `access` was saved in `provider` (the SDK may save the same one again). */
function assertNoNewToken(provider, access) {
  const other = provider.savedTokens.filter((tk) => tk?.access_token !== access);
  assert.deepEqual(other.map((tk) => tk?.scope), [], "the SDK got a new token for the buyer");
}

/** One line per recorded exchange: `METHOD /path rpc → status`. */
const wireSummary = (log) => log.map((r) => `${r.method} ${new URL(r.url).pathname} ${r.body?.method ?? ""} → ${r.status}`).join("; ");

/** Checks of the 2026-07-28 wire: no session id, the protocol headers, `_meta` on every request. */
function assertStatelessWire(log) {
  const posts = log.filter((r) => r.method === "POST");
  assert.ok(posts.length >= 2, `too few POSTs recorded: ${posts.length}`);
  assert.equal(posts[0].body?.method, "server/discover", "the first request is server/discover");
  for (const r of log) {
    assert.equal(r.headers["mcp-session-id"], undefined, `request ${r.body?.method} carries Mcp-Session-Id`);
    assert.equal(r.resHeaders["mcp-session-id"], undefined, `response to ${r.body?.method} carries Mcp-Session-Id`);
  }
  for (const r of posts) {
    const m = r.body?.method;
    assert.ok(m, `a POST without a JSON-RPC method: ${JSON.stringify(r.body)}`);
    assert.notEqual(m, "initialize", "a 2026-07-28 client sent initialize");
    assert.equal(r.headers["mcp-protocol-version"], V2, `${m}: Mcp-Protocol-Version`);
    assert.equal(r.headers["mcp-method"], m, `${m}: Mcp-Method header`);
    if (m === "tools/call") assert.equal(r.headers["mcp-name"], r.body.params.name, "Mcp-Name = the tool's name");
    if (r.body.id !== undefined) {
      assert.equal(r.body.params?._meta?.["io.modelcontextprotocol/protocolVersion"], V2, `${m}: _meta protocolVersion`);
    }
    assert.ok(r.status >= 200 && r.status < 300, `${m}: HTTP ${r.status}`);
  }
}

async function ok(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  assert.notEqual(res.isError, true, `${name} failed: ${JSON.stringify(res.content)}`);
  return res.structuredContent;
}

test("2026-07-28, SDK v2: the consent-link flow on /mcp, stateless", { skip, timeout: 120000 }, (t) =>
  withIsto(t, { prefix: "isto-v2-flow-" }, async (env) => {
    const { isto, smtp } = env;
    const step = stepper(t);
    const rec = recordingFetch();
    const offers = writeJsonl(env.work, "offers.jsonl", [octavia("v2-under", 199000), octavia("v2-over", 320000)]);
    const imported = await isto.importOffers(offers);
    assert.equal(imported.code, 0, `import failed: ${imported.stdout}\n${imported.stderr}`);

    const client = await connectV2(isto.mcpUrl, { fetch: rec.fetch });
    env.defer(() => client.close());
    const s = {};

    await step("server/discover negotiated 2026-07-28 (modern era)", async () => {
      assert.equal(client.getProtocolEra(), "modern");
      assert.equal(client.getNegotiatedProtocolVersion(), V2);
    });

    await step("tools/list: the six tools, cacheable by anyone (ttlMs, cacheScope public)", async () => {
      const list = await client.listTools();
      assert.deepEqual(list.tools.map((x) => x.name), PUBLIC_TOOLS);
      assert.equal(list.cacheScope, "public");
      assert.ok(Number.isInteger(list.ttlMs) && list.ttlMs >= 60000, `ttlMs ${list.ttlMs}`);
    });

    await step("intent_publish_intent → awaiting_consent with a consentUrl and an intentCode", async () => {
      const out = await ok(client, "intent_publish_intent", {
        statement: "Hledám Škoda Octavia, nejlépe diesel",
        criteria: { category: "vehicles", make: "Škoda", model: "Octavia" },
        area: "CZ-64",
        budget: { max: 400000, currency: "CZK" },
        hiddenLimit: HIDDEN_LIMIT,
      });
      assert.equal(out.intent.status, "awaiting_consent");
      assert.match(out.consentUrl, new RegExp(`^${isto.baseUrl}/consent/`));
      assert.ok(out.intentCode, JSON.stringify(out));
      Object.assign(s, out);
    });

    await step("the person consents on the page and confirms by e-mail → active", async () => {
      s.email = `v2-${Date.now()}@buyer.example`;
      await consentAndConfirm(smtp, s.consentUrl, s.email);
      const got = await ok(client, "intent_get_intent", { intentCode: s.intentCode });
      assert.equal(got.intent.status, "active");
      assert.ok(!JSON.stringify(got).includes(s.email), "get_intent shows the e-mail");
    });

    await step("intent_list_matches → the offer under the hidden limit only", async () => {
      const deadline = Date.now() + 20000;
      let out;
      do {
        out = await ok(client, "intent_list_matches", { intentCode: s.intentCode });
        if (out.matches.length) break;
        await new Promise((r) => setTimeout(r, 300));
      } while (Date.now() < deadline);
      const titles = out.matches.map((m) => m.title ?? m.offer?.title);
      assert.deepEqual(titles, ["Škoda Octavia v2-under"], JSON.stringify(out));
      assert.ok("nextSince" in out);
    });

    await step("intent_withdraw_intent → withdrawn", async () => {
      assert.equal((await ok(client, "intent_withdraw_intent", { intentCode: s.intentCode })).status, "withdrawn");
      assert.equal((await ok(client, "intent_get_intent", { intentCode: s.intentCode })).intent.status, "withdrawn");
    });

    await step("the wire: no Mcp-Session-Id, Mcp-Method/Mcp-Name, _meta on every request", async () => {
      assertStatelessWire(rec.log);
      const methods = rec.log.map((r) => r.body?.method);
      assert.ok(methods.includes("tools/call") && methods.includes("tools/list"), methods.join(","));
    });
  }),
);

test("2026-07-28, SDK v2: OAuth on /mcp/buyer (registration, sign-in, Allow, tools)", { skip, timeout: 120000 }, (t) =>
  withIsto(t, { prefix: "isto-v2-oauth-" }, async (env) => {
    const { isto, smtp } = env;
    const step = stepper(t);
    const url = `${isto.baseUrl}/mcp/buyer`;
    const person = await signUpBuyer(isto, smtp);
    const seen = {};
    const provider = await v2Provider(person.browser, seen, "isto e2e v2 agent");
    const rec = recordingFetch();
    let client = null;
    env.defer(() => client?.close());

    await step("without a token: 401, the SDK registers and sends the person to authorize", async () => {
      await assert.rejects(connectV2(url, { fetch: rec.fetch, authProvider: provider }), (e) => e instanceof UnauthorizedError);
      assert.equal(rec.log[0].status, 401, "the first request is refused with 401");
      assert.equal(provider.registrations, 1, "dynamic client registration");
      assert.equal(seen.person?.kind, "redirect", `the person's part: ${JSON.stringify(seen.person?.steps)}`);
    });

    await step("finishAuth with the code → tokens for /mcp/buyer", async () => {
      const back = new URL(seen.person.location);
      assert.ok(back.searchParams.get("code"), seen.person.location);
      await new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }).finishAuth(back.searchParams);
      assert.ok(provider.tokens()?.access_token, "no access token saved");
    });

    await step("the tools with the token, stateless: publish (active) → get → list_matches → withdraw", async () => {
      rec.log.length = 0;
      client = await connectV2(url, { fetch: rec.fetch, authProvider: provider });
      assert.equal(client.getProtocolEra(), "modern");
      const list = await client.listTools();
      assert.ok(list.tools.some((x) => x.name === "intent_publish_intent"), JSON.stringify(list.tools.map((x) => x.name)));
      assert.equal(list.cacheScope, "public");
      const pub = await ok(client, "intent_publish_intent", {
        statement: "Hledám Škoda Octavia Combi, diesel",
        area: "CZ-64",
        budget: { max: 300000, currency: "CZK" },
      });
      assert.equal(pub.intent.status, "active");
      const id = pub.intent.id;
      assert.equal((await ok(client, "intent_get_intent", { id })).intent.status, "active");
      assert.ok(Array.isArray((await ok(client, "intent_list_matches", { intent: id })).matches));
      assert.equal((await ok(client, "intent_withdraw_intent", { id })).status, "withdrawn");
      assertStatelessWire(rec.log);
      for (const r of rec.log) assert.match(r.headers.authorization ?? "", /^Bearer /, `${r.body?.method} without the token`);
    });
  }),
);

// ---------------------------------------------------------------------------
// raw HTTP: the server fixes for MCP 2026-07-28

const meta = (v = V2) => ({
  "io.modelcontextprotocol/protocolVersion": v,
  "io.modelcontextprotocol/clientInfo": { name: "isto-e2e-raw", version: "0.0.0" },
  "io.modelcontextprotocol/clientCapabilities": {},
});

/** POST one JSON-RPC message; answers {status, type, session, text, json}. */
async function post(url, message, headers = {}) {
  const h = { "content-type": "application/json", ...headers };
  for (const [k, v] of Object.entries(h)) if (v === undefined) delete h[k];
  const res = await fetch(url, { method: "POST", headers: h, body: typeof message === "string" ? message : JSON.stringify(message) });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* SSE or plain text */
  }
  return { status: res.status, type: res.headers.get("content-type"), session: res.headers.get("mcp-session-id"), text, json };
}

/** The `protocolVersion` of an initialize answer (JSON or one SSE event). */
function negotiated(r) {
  const data = r.json ?? JSON.parse(r.text.split("\n").find((l) => l.startsWith("data: {")).slice(6));
  return data.result?.protocolVersion;
}

const modern = (method, id, params = {}, v = V2) => [
  { jsonrpc: "2.0", id, method, params: { ...params, _meta: meta(v) } },
  { "mcp-protocol-version": v, "mcp-method": method, ...(params.name ? { "mcp-name": params.name } : {}) },
];

test("both revisions, raw HTTP: deterministic cacheable tools/list, JSON for JSON-only clients, newer versions negotiated", { skip, timeout: 60000 }, (t) =>
  withIsto(t, { prefix: "isto-v2-raw-" }, async ({ isto }) => {
    const step = stepper(t);
    const url = isto.mcpUrl;
    const both = "application/json, text/event-stream";

    await step("2026-07-28 tools/list: the same bytes on every call, ttlMs and cacheScope public", async () => {
      const answers = [];
      for (let i = 0; i < 3; i++) {
        const [m, h] = modern("tools/list", 7);
        const r = await post(url, m, { accept: both, ...h });
        assert.equal(r.status, 200, r.text);
        assert.match(r.type, /^application\/json/, "a one-message answer is JSON");
        answers.push(r.text);
      }
      assert.equal(answers[1], answers[0], "tools/list differs between calls");
      assert.equal(answers[2], answers[0], "tools/list differs between calls");
      const res = JSON.parse(answers[0]).result;
      assert.equal(res.cacheScope, "public");
      assert.equal(res.ttlMs, 3600000);
      assert.equal(res.resultType, "complete");
      assert.deepEqual(res.tools.map((x) => x.name), PUBLIC_TOOLS);
    });

    await step("2025-11-25 session tools/list: the same tools, same bytes, no caching hints", async () => {
      const init = await post(url, initializeBody(), { accept: "application/json" });
      assert.equal(init.status, 200, init.text);
      assert.ok(init.session, "a 2025-11-25 initialize opens a session");
      const sh = { accept: "application/json", "mcp-session-id": init.session, "mcp-protocol-version": "2025-11-25" };
      const note = await post(url, { jsonrpc: "2.0", method: "notifications/initialized" }, sh);
      assert.equal(note.status, 202, note.text);
      const lists = [];
      for (let i = 0; i < 2; i++) lists.push(await post(url, { jsonrpc: "2.0", id: 8, method: "tools/list" }, sh));
      assert.equal(lists[1].text, lists[0].text, "tools/list differs between calls");
      const res = lists[0].json.result;
      assert.equal(res.ttlMs, undefined);
      assert.equal(res.cacheScope, undefined);
      const [m, h] = modern("tools/list", 8);
      const now = (await post(url, m, { accept: both, ...h })).json.result;
      assert.deepEqual(res.tools, now.tools, "the two revisions list different tools");
    });

    await step("Accept: application/json, */* or none → JSON (initialize, tools/call on both revisions), not 406", async () => {
      for (const accept of ["application/json", "*/*", undefined]) {
        const init = await post(url, initializeBody(), { accept });
        assert.equal(init.status, 200, `Accept ${accept}: ${init.text}`);
        assert.match(init.type, /^application\/json/, `Accept ${accept}: ${init.type}`);
        assert.equal(init.json.result.protocolVersion, "2025-11-25");
        const [m, h] = modern("tools/call", 9, { name: "intent_search_offers", arguments: { statement: "Škoda Octavia" } });
        const call = await post(url, m, { accept, ...h });
        assert.equal(call.status, 200, `Accept ${accept}: ${call.text}`);
        assert.match(call.type, /^application\/json/);
        assert.equal(call.json.id, 9);
        assert.ok(Array.isArray(call.json.result.structuredContent.offers), call.text);
      }
      const legacy = await post(url, initializeBody(), { accept: both });
      assert.match(legacy.type, /^text\/event-stream/, "a client that accepts both still gets its SSE stream");
      assert.equal((await post(url, initializeBody(), { accept: "text/html" })).status, 406, "no JSON accepted: 406");
    });

    await step("a newer protocol version: initialize negotiated down; 2026-07-28 requests get the supported list", async () => {
      const init = JSON.parse(initializeBody());
      init.params.protocolVersion = "2099-01-01";
      const r = await post(url, init, { accept: both });
      assert.equal(r.status, 200, r.text);
      const data = r.text.split("\n").find((l) => l.startsWith("data: {"));
      assert.equal(JSON.parse(data.slice(6)).result.protocolVersion, "2025-11-25");
      // The same with the newer version in the MCP-Protocol-Version header too.
      for (const accept of [both, "application/json"]) {
        const h = await post(url, init, { accept, "mcp-protocol-version": "2099-01-01" });
        assert.equal(h.status, 200, `initialize, header and body 2099-01-01, Accept ${accept}: ${h.text}`);
        assert.equal(negotiated(h), "2025-11-25", h.text);
      }
      // A header that contradicts the body stays refused.
      const bad = await post(url, initializeBody(), { accept: both, "mcp-protocol-version": "2099-01-01" });
      assert.equal(bad.status, 400, `header 2099-01-01, body 2025-11-25: ${bad.text}`);
      for (const method of ["server/discover", "tools/list"]) {
        const [m, h] = modern(method, 10, {}, "2099-01-01");
        const e = await post(url, m, { accept: both, ...h });
        assert.equal(e.json?.error?.code, -32022, `${method}: ${e.text}`);
        assert.ok(e.json.error.data.supported.includes(V2), e.text);
        assert.ok(e.json.error.data.supported.includes("2025-11-25"), e.text);
        const [m2, h2] = modern(method, 11, {}, e.json.error.data.supported.at(-1));
        const again = await post(url, m2, { accept: both, ...h2 });
        assert.equal(again.status, 200, `${method} with the server's newest version: ${again.text}`);
        assert.ok(again.json?.result, again.text);
      }
    });

    await step("the v1 SDK as a client one revision ahead (2099-01-01 in header and body): negotiated down, then served", async () => {
      const log = [];
      // What a newer SDK would send: its own newest version in the initialize body and in
      // the header from the first request on.
      const ahead = async (u, init = {}) => {
        let body = init.body;
        const msg = typeof body === "string" ? JSON.parse(body) : null;
        if (msg?.method === "initialize") body = JSON.stringify({ ...msg, params: { ...msg.params, protocolVersion: "2099-01-01" } });
        const headers = Object.fromEntries(new Headers(init.headers));
        const res = await fetch(u, { ...init, body });
        log.push({ method: msg?.method, version: headers["mcp-protocol-version"], body: body && JSON.parse(body), status: res.status });
        return res;
      };
      const transport = new TransportV1(new URL(url), { fetch: ahead });
      transport.setProtocolVersion("2099-01-01");
      const client = new ClientV1({ name: "isto-e2e-ahead", version: "0.0.0" });
      try {
        await client.connect(transport);
        const res = await client.callTool({ name: "intent_search_offers", arguments: { statement: "Škoda Octavia" } });
        assert.notEqual(res.isError, true, JSON.stringify(res.content));
      } finally {
        await client.close();
      }
      const first = log.find((r) => r.method === "initialize");
      assert.equal(first?.version, "2099-01-01", JSON.stringify(log));
      assert.equal(first.body.params.protocolVersion, "2099-01-01");
      assert.equal(first.status, 200, JSON.stringify(log));
      assert.equal(transport.protocolVersion, "2025-11-25", "the version the server negotiated");
      const call = log.find((r) => r.method === "tools/call");
      assert.equal(call?.version, "2025-11-25", `later requests carry the negotiated version: ${JSON.stringify(log)}`);
    });
  }),
);

// ---------------------------------------------------------------------------
// the seller's OAuth flow on /mcp/seller

const SELLER_TOOLS = ["intent_submit_offer", "intent_list_open_intents", "intent_demand_summary", "intent_search_offers"];
const BUYER_TOOLS = ["intent_publish_intent", "intent_get_intent", "intent_list_matches", "intent_withdraw_intent"];

test("2026-07-28, SDK v2: a seller's OAuth on /mcp/seller (one-time link, Allow, seller tools); a buyer's token refused", { skip, timeout: 150000 }, (t) =>
  withIsto(t, { prefix: "isto-v2-seller-" }, async (env) => {
    const { isto, smtp } = env;
    const step = stepper(t);
    const base = isto.baseUrl;
    const sellerUrl = `${base}/mcp/seller`;
    const buyerUrl = `${base}/mcp/buyer`;
    const limit = 12000;
    const limitRe = /12[\s\u00a0\u202f.,']?000/;
    const buyerEmail = `v2-pseudo-${Date.now()}@buyer.example`;
    const statement = "Hľadám Škoda Octavia combi (v2)";
    const clients = [];
    env.defer(async () => {
      for (const c of clients) await c.close().catch(() => {});
    });
    const s = {};

    await step("isto admin seller add (vehicles, SK-BL)", async () => {
      s.seller = await addSeller(isto, { name: "Auto V2 s.r.o.", email: "seller-v2@example.test", regions: ["SK-BL"] });
      assert.match(s.seller.sellerId, /^sel_/);
    });

    await step("a buyer's v2 client on /mcp publishes a pseudonymous intent with a hidden limit; consent, confirm → active", async () => {
      const buyer = await connectV2(isto.mcpUrl);
      clients.push(buyer);
      const pub = await ok(buyer, "intent_publish_intent", {
        statement,
        criteria: { category: "vehicles", make: "Škoda", model: "Octavia" },
        area: "SK-BL",
        budget: { max: 15000, currency: "EUR" },
        hiddenLimit: limit,
        visibility: "pseudonymous",
      });
      assert.equal(pub.intent.visibility, "pseudonymous", JSON.stringify(pub));
      await consentAndConfirm(smtp, pub.consentUrl, buyerEmail);
      assert.equal((await ok(buyer, "intent_get_intent", { intentCode: pub.intentCode })).intent.status, "active");
      Object.assign(s, { buyer, intentId: pub.intent.id, intentCode: pub.intentCode });
    });

    await step("the seller signs in with a one-time e-mail link", async (st) => {
      const signin = await signInWithLink(isto, smtp, s.seller.email);
      st.diagnostic(signin.steps.join("; "));
      s.sellerBrowser = signin.browser;
    });

    const seen = {};
    const rec = recordingFetch();
    await step("without a token: 401, the v2 SDK registers and sends the seller to authorize <public>/mcp/seller", async (st) => {
      s.provider = await v2Provider(s.sellerBrowser, seen, "isto e2e v2 seller agent");
      await assert.rejects(connectV2(sellerUrl, { fetch: rec.fetch, authProvider: s.provider }), (e) => e instanceof UnauthorizedError);
      assert.equal(rec.log[0].status, 401, "the first request is refused with 401");
      const challenge = bearerParams(rec.log[0].resHeaders["www-authenticate"]);
      assert.equal(challenge?.resource_metadata, `${base}/.well-known/oauth-protected-resource/mcp/seller`, rec.log[0].resHeaders["www-authenticate"]);
      assert.equal(s.provider.registrations, 1, "dynamic client registration");
      const url = s.provider.authorizationUrls.at(-1);
      assert.equal(`${url.origin}${url.pathname}`, `${base}/oauth/authorize`);
      assert.equal(url.searchParams.get("resource"), sellerUrl, url.href);
      assert.deepEqual((url.searchParams.get("scope") ?? "").split(" ").sort(), ["demand", "offers"], url.href);
      st.diagnostic(`seller: ${seen.person?.steps?.join("; ")}`);
      assert.equal(seen.person?.kind, "redirect", `the seller's part: ${JSON.stringify(seen.person)}`);
      assert.ok(!seen.person.steps.some((x) => x.startsWith("POST /signin")), "the signed-in seller was asked to sign in again");
    });

    await step("finishAuth with the code → a token for /mcp/seller, scopes offers demand", async () => {
      const back = new URL(seen.person.location);
      assert.ok(back.searchParams.get("code"), seen.person.location);
      assert.equal(back.searchParams.get("iss"), base);
      assert.equal(back.searchParams.get("state"), s.provider.lastState);
      await new StreamableHTTPClientTransport(new URL(sellerUrl), { authProvider: s.provider }).finishAuth(back.searchParams);
      const tokens = s.provider.tokens();
      assert.ok(tokens?.access_token, "no access token saved");
      assert.deepEqual(String(tokens.scope ?? "").split(" ").sort(), ["demand", "offers"], `token scope: ${tokens.scope}`);
    });

    await step("tools/list on /mcp/seller with the token: the seller tools, no buyer tools", async () => {
      rec.log.length = 0;
      s.client = await connectV2(sellerUrl, { fetch: rec.fetch, authProvider: s.provider });
      clients.push(s.client);
      assert.equal(s.client.getProtocolEra(), "modern");
      assert.equal(s.client.getNegotiatedProtocolVersion(), V2);
      const names = (await s.client.listTools()).tools.map((x) => x.name);
      for (const name of SELLER_TOOLS) assert.ok(names.includes(name), `tools/list lacks ${name}: ${names}`);
      for (const name of BUYER_TOOLS) assert.ok(!names.includes(name), `/mcp/seller offers the buyer tool ${name}`);
    });

    await step("intent_list_open_intents → the intent under a pseudonym and a hdl_ handle, no contact or hidden limit", async () => {
      const res = await s.client.callTool({ name: "intent_list_open_intents", arguments: {} });
      assert.notEqual(res.isError, true, JSON.stringify(res.content));
      const intents = res.structuredContent.intents;
      assert.equal(intents.length, 1, JSON.stringify(intents));
      const [mine] = intents;
      assert.equal(mine.statement, statement);
      assert.match(mine.id, /^hdl_/);
      assert.notEqual(mine.id, s.intentId);
      assert.match(mine.pseudonym ?? "", /^buyer-\S+$/, `pseudonym: ${mine.pseudonym}`);
      assert.deepEqual(mine.area?.regions, ["SK-BL"]);
      const json = JSON.stringify(res);
      assert.ok(!json.includes("@"), `an e-mail-like string in the seller's view: ${json}`);
      assert.ok(!json.includes(String(limit)) && !limitRe.test(json), `the hidden limit in the seller's view: ${json}`);
      assert.ok(!/hiddenLimit/i.test(json), `a hidden-limit field in the seller's view: ${json}`);
      assert.ok(!json.includes(s.intentCode) && !json.includes(s.intentId.slice(4)), `the intentCode or id in the seller's view: ${json}`);
      s.handle = mine.id;
    });

    await step("intent_submit_offer below the hidden limit → accepted; the buyer's list_matches shows the reply", async () => {
      const out = await ok(s.client, "intent_submit_offer", {
        source: { kind: "reply" },
        inReplyTo: s.handle,
        title: "Škoda Octavia Combi 2.0 TDI (v2 reply)",
        category: "vehicles",
        attributes: { make: "Škoda", model: "Octavia", body: "combi", fuel: "diesel", year: 2017 },
        price: { amount: 11000, currency: "EUR" },
        area: "SK-BL",
        url: "https://auto-v2.example/octavia",
      });
      assert.equal(out.accepted, true, JSON.stringify(out));
      assert.match(out.offerId, /^off_/);
      let matches = [];
      await waitFor(
        async () => {
          matches = (await ok(s.buyer, "intent_list_matches", { intentCode: s.intentCode })).matches;
          return matches.length > 0;
        },
        { timeout: 15000, interval: 300, what: "the reply among the buyer's matches" },
      );
      assert.deepEqual(matches.map((m) => m.offer.id), [out.offerId]);
      assert.equal(matches[0].offer.inReplyTo, s.intentId);
      assert.equal(matches[0].offer.seller?.id, s.seller.sellerId);
    });

    await step("the seller's wire: stateless 2026-07-28, the bearer token on every request", async () => {
      assertStatelessWire(rec.log);
      for (const r of rec.log) assert.match(r.headers.authorization ?? "", /^Bearer /, `${r.body?.method} without the token`);
      assert.ok(rec.log.some((r) => r.headers["mcp-name"] === "intent_list_open_intents"));
    });

    // A buyer's token, from a raw code grant for /mcp/buyer.
    await step("a buyer's /mcp/buyer token on /mcp/seller, raw 2026-07-28: 401 invalid_token, the seller's metadata", async () => {
      const buyer = await buyerWithToken(isto, smtp);
      Object.assign(s, { buyerPerson: buyer.person, buyerClient: buyer.client, buyerTokens: buyer.tokens });
      const [m, h] = modern("server/discover", 1);
      const auth = { authorization: `Bearer ${s.buyerTokens.access_token}`, accept: "application/json, text/event-stream" };
      const onBuyer = await post(buyerUrl, m, { ...auth, ...h });
      assert.equal(onBuyer.status, 200, `the token does not work on /mcp/buyer: ${onBuyer.text}`);
      const res = await fetch(sellerUrl, { method: "POST", headers: { "content-type": "application/json", ...auth, ...h }, body: JSON.stringify(m) });
      const body = await res.text();
      assert.equal(res.status, 401, `/mcp/seller answered ${res.status} to a buyer's token: ${body.slice(0, 300)}`);
      const p = bearerParams(res.headers.get("www-authenticate"));
      assert.equal(p?.error, "invalid_token", res.headers.get("www-authenticate"));
      assert.equal(p?.resource_metadata, `${base}/.well-known/oauth-protected-resource/mcp/seller`);
      assert.ok(!body.includes("intent_list_open_intents"), body);
    });

    await step("the v2 SDK with the buyer's tokens on /mcp/seller: 401, and the refresh for /mcp/seller refused", async (st) => {
      const provider = await v2Provider(s.buyerPerson.browser, {}, "isto e2e v2 buyer agent");
      provider.saveClientInformation(s.buyerClient);
      provider.saveTokens(s.buyerTokens);
      const rec2 = recordingFetch();
      await assert.rejects(connectV2(sellerUrl, { fetch: rec2.fetch, authProvider: provider }), (e) => {
        st.diagnostic(`rejected with ${e?.constructor?.name}: ${e?.message}`);
        return /resource/i.test(e?.message ?? "");
      });
      st.diagnostic(`wire: ${wireSummary(rec2.log)}`);
      const mcp = rec2.log.filter((r) => new URL(r.url).pathname === "/mcp/seller");
      assert.ok(mcp.length >= 1 && mcp.every((r) => r.status === 401), `/mcp/seller: ${mcp.map((r) => r.status)}`);
      const refresh = rec2.log.filter((r) => new URL(r.url).pathname === "/oauth/token");
      assert.ok(refresh.length >= 1 && refresh.every((r) => r.status === 400), `the refresh for /mcp/seller: ${refresh.map((r) => r.status)}`);
      assertNoNewToken(provider, s.buyerTokens.access_token);
    });

    await step("the v2 SDK with the buyer's access token only: a new authorization of /mcp/seller, which the buyer cannot allow", async (st) => {
      const seenBuyer = {};
      const provider = await v2Provider(s.buyerPerson.browser, seenBuyer, "isto e2e v2 buyer agent");
      provider.saveClientInformation(s.buyerClient);
      provider.saveTokens({ access_token: s.buyerTokens.access_token, token_type: "Bearer", scope: s.buyerTokens.scope });
      const rec2 = recordingFetch();
      await assert.rejects(connectV2(sellerUrl, { fetch: rec2.fetch, authProvider: provider }), (e) => e instanceof UnauthorizedError);
      st.diagnostic(`wire: ${wireSummary(rec2.log)}`);
      assert.ok(rec2.log.filter((r) => new URL(r.url).pathname === "/mcp/seller").every((r) => r.status === 401));
      assert.equal(provider.authorizationUrls.at(-1)?.searchParams.get("resource"), sellerUrl);
      st.diagnostic(`buyer at authorize: ${seenBuyer.person?.steps?.join("; ")}`);
      assert.equal(seenBuyer.person?.kind, "page", `the buyer's authorization of /mcp/seller: ${JSON.stringify(seenBuyer.person)}`);
      assert.equal(seenBuyer.person.status, 403, seenBuyer.person.text?.slice(0, 300));
      assertNoNewToken(provider, s.buyerTokens.access_token);
    });

    await step("initialize naming a newer version in header and body, with the endpoint's token: negotiated down on /mcp/buyer and /mcp/seller", async () => {
      const init = JSON.parse(initializeBody());
      init.params.protocolVersion = "2099-01-01";
      for (const [endpoint, token] of [
        [buyerUrl, s.buyerTokens.access_token],
        [sellerUrl, s.provider.tokens().access_token],
      ]) {
        const h = { accept: "application/json, text/event-stream", authorization: `Bearer ${token}`, "mcp-protocol-version": "2099-01-01" };
        const r = await post(endpoint, init, h);
        assert.equal(r.status, 200, `${endpoint}: ${r.text}`);
        assert.equal(negotiated(r), "2025-11-25", `${endpoint}: ${r.text}`);
      }
    });
  }),
);
