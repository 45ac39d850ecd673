// isto as its own OAuth 2.1 authorization server, end to end, with the official MCP
// TypeScript SDK as the client of the buyer endpoint /mcp/buyer:
//
// * the SDK's Client + StreamableHTTPClientTransport with an OAuthClientProvider
//   (lib/oauth.mjs MemoryOAuthProvider) connects without a token, gets 401 with the
//   protected resource metadata, registers itself (DCR), and its redirectToAuthorization
//   hands the URL to the harness, which plays the person with plain HTTP: the holder sends
//   a signed-out person to /signin, the person signs in with the password chosen at
//   sign-up and presses Allow. The harness reads the code from the 303 back to the
//   loopback redirect URI (nothing listens there: the redirect is read, not followed),
//   then transport.finishAuth(code) gets the tokens and a new connection calls the tools
//   (publish → active at once for an account that accepted consent at sign-up, get,
//   list_matches, withdraw, another person's intent → not_found);
// * the same access token is refused on /mcp/seller;
// * refresh token rotation with reuse detection, and refusals at the authorization and
//   token endpoints (wrong redirect_uri, missing PKCE, code_challenge_method=plain,
//   replayed code, wrong resource), with raw HTTP.
//
// The steps run in order (lib/steps.mjs): the MCP steps depend on each other; the OAuth
// checks are independent, so they run even when the MCP part fails.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import test from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { auth, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import {
  Browser,
  freePort,
  httpRequest,
  initializeBody,
  resultText,
  withIsto,
} from "./lib/harness.mjs";
import {
  actAsPerson,
  authorizeUrl,
  codeGrant,
  MemoryOAuthProvider,
  newState,
  parseRedirect,
  pkcePair,
  registerClient,
  signUpBuyer,
  tokenRequest,
} from "./lib/oauth.mjs";
import { stepper } from "./lib/steps.mjs";

const BUYER_TOOLS = [
  "intent_publish_intent",
  "intent_get_intent",
  "intent_update_intent",
  "intent_withdraw_intent",
  "intent_list_matches",
  "intent_search_offers",
];

/** POST an MCP initialize to `url` with an optional bearer token (raw, no SDK). */
function initializeWith(url, token) {
  const u = new URL(url);
  return httpRequest(url, {
    method: "POST",
    headers: {
      Host: u.host,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
    },
    body: initializeBody(),
  });
}

/** The auth-params of a `WWW-Authenticate: Bearer …` header as an object. */
function bearerParams(header) {
  const out = {};
  const h = String(header ?? "");
  if (!/^Bearer\b/i.test(h)) return null;
  for (const m of h.matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/gi)) out[m[1].toLowerCase()] = m[2].replace(/\\(.)/g, "$1");
  return out;
}

/** The error text of a tool result or JSON-RPC error. */
async function toolOutcome(client, name, args) {
  try {
    const res = await client.callTool({ name, arguments: args });
    return { res, text: resultText(res), isError: res.isError === true };
  } catch (e) {
    return { res: null, text: `${e.message} ${JSON.stringify(e.data ?? "")}`, isError: true, rpc: true };
  }
}

/** A short refresh grace window, so that reuse after it is quick to show. */
const GRACE_SECS = 2;

test("OAuth 2.1 on isto: SDK client on /mcp/buyer, token binding, refresh reuse, refusals", { timeout: 120000 }, (t) => withIsto(t, { prefix: "isto-oauth-", start: false }, async (env) => {
  const config = path.join(env.work, "isto.toml");
  fs.writeFileSync(config, `[limits]\nrefresh_grace_secs = ${GRACE_SECS}\n`);
  await env.start({ env: { ISTO_CONFIG: config } });
  const { smtp, isto } = env;
  const clients = [];
  env.defer(async () => {
    for (const c of clients) await c.close().catch(() => {});
  });

  const base = isto.baseUrl;
  const buyerUrl = `${base}/mcp/buyer`;
  const sellerUrl = `${base}/mcp/seller`;
  const step = stepper(t);

  // Two people with buyer accounts (sign-up with password + confirmation e-mail). Their
  // sign-up browsers stay signed in; the SDK flow uses a fresh, signed-out one.
  const alice = await signUpBuyer(isto, smtp);
  const bob = await signUpBuyer(isto, smtp);

  // A public client registered by hand for the raw-HTTP checks.
  const loopback = "http://127.0.0.1/callback";
  const raw = await registerClient(base, {
    client_name: "isto e2e raw client",
    redirect_uris: [loopback],
    token_endpoint_auth_method: "none",
  });
  assert.equal(raw.status, 201, `registration failed: ${JSON.stringify(raw.body)}`);
  const rawClient = raw.body;
  // A loopback redirect URI on a free port (any port matches the registered one, RFC 8252
  // §7.3). Nothing listens there: the harness reads the 303 instead of following it.
  const redirectAt = async () => `http://127.0.0.1:${await freePort()}/callback`;

  // ---------------------------------------------------------------------------
  await step(
    "metadata: RFC 8414 issuer and RFC 9728 resource for /mcp/buyer",
    async () => {
      const as = await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json();
      assert.equal(as.issuer, base);
      assert.equal(as.authorization_endpoint, `${base}/oauth/authorize`);
      assert.equal(as.token_endpoint, `${base}/oauth/token`);
      assert.equal(as.registration_endpoint, `${base}/oauth/register`);
      assert.deepEqual(as.code_challenge_methods_supported, ["S256"]);
      const prm = await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp/buyer`)).json();
      assert.equal(prm.resource, buyerUrl);
      assert.deepEqual(prm.authorization_servers, [base]);
      assert.ok(prm.scopes_supported.includes("intents"), JSON.stringify(prm));
    },
    { independent: true },
  );

  await step(
    "POST /mcp/buyer without a token → 401 with WWW-Authenticate: Bearer resource_metadata",
    async () => {
      const res = await initializeWith(buyerUrl);
      assert.equal(res.status, 401, `/mcp/buyer answered ${res.status} without a token: ${res.body.slice(0, 300)}`);
      const p = bearerParams(res.headers["www-authenticate"]);
      assert.ok(p, `no Bearer challenge: ${res.headers["www-authenticate"]}`);
      assert.equal(p.resource_metadata, `${base}/.well-known/oauth-protected-resource/mcp/buyer`);
    },
    { independent: true },
  );

  // ---------------------------------------------------------------------------
  // The SDK client and the person.
  const sdk = { code: null, redirect: null, person: null, via: null, tokens: null, client: null };
  const personBrowser = new Browser(); // signed out: the holder must ask for sign-in
  const provider = new MemoryOAuthProvider({
    redirectUrl: await redirectAt(),
    clientMetadata: {
      client_name: "isto e2e SDK client",
      redirect_uris: [], // filled below with the redirect URL
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    },
    onRedirect: async (url) => {
      const outcome = await actAsPerson(personBrowser, url.href, { credentials: alice });
      sdk.person = outcome;
      if (outcome.kind === "redirect") {
        sdk.redirect = parseRedirect(outcome.location);
        sdk.code = sdk.redirect.get("code");
      }
    },
  });
  provider.clientMetadata.redirect_uris.push(String(provider.redirectUrl));

  await step(
    "SDK: connect to /mcp/buyer without a token is refused (401) and starts authorization",
    async () => {
      const client = new Client({ name: "isto-e2e-oauth", version: "0.0.0" });
      const transport = new StreamableHTTPClientTransport(new URL(buyerUrl), { authProvider: provider });
      let connected = false;
      try {
        await client.connect(transport);
        connected = true;
      } catch (e) {
        assert.ok(e instanceof UnauthorizedError, `connect failed otherwise than with UnauthorizedError: ${e?.stack ?? e}`);
      } finally {
        await client.close().catch(() => {});
      }
      assert.equal(connected, false, "/mcp/buyer accepted an MCP connection without a token");
      assert.equal(provider.authorizationUrls.length, 1, "redirectToAuthorization was not called");
      sdk.via = "connect";
    },
    { independent: true },
  );

  await step(
    "SDK: registration (DCR), sign-in and Allow through the OAuthClientProvider",
    async (st) => {
      if (!sdk.via) {
        // The connect step did not reach authorization (see its failure): drive the
        // SDK's auth() directly, as the transport would after a 401, so that the OAuth
        // part of the SDK flow is still checked.
        st.diagnostic("authorization started with the SDK's auth() directly (the connect step did not get a 401)");
        const result = await auth(provider, { serverUrl: new URL(buyerUrl) });
        assert.equal(result, "REDIRECT");
        sdk.via = "auth()";
      }
      const info = provider.clientInformation();
      assert.equal(provider.registrations, 1, "the SDK did not register the client exactly once");
      assert.match(info?.client_id ?? "", /^cli_/, `unexpected client information: ${JSON.stringify(info)}`);
      const url = provider.authorizationUrls.at(-1);
      assert.equal(`${url.origin}${url.pathname}`, `${base}/oauth/authorize`);
      assert.equal(url.searchParams.get("resource"), buyerUrl, `resource parameter: ${url.href}`);
      assert.equal(url.searchParams.get("code_challenge_method"), "S256");
      assert.equal(url.searchParams.get("scope"), "intents");
      assert.ok(sdk.person, "the person's part did not run");
      assert.ok(
        sdk.person.steps.some((s) => s.startsWith("POST /signin")),
        `the holder did not ask the signed-out person to sign in: ${sdk.person.steps.join("; ")}`,
      );
      assert.equal(
        sdk.person.kind,
        "redirect",
        `the authorization did not redirect back: HTTP ${sdk.person.status}: ${sdk.person.text?.slice(0, 300)} (${sdk.person.steps.join("; ")})`,
      );
      const r = sdk.redirect;
      assert.equal(`${r.url.origin}${r.url.pathname}`, String(provider.redirectUrl));
      assert.equal(r.get("error"), null, `error=${r.get("error")}: ${r.get("error_description")}`);
      assert.ok(sdk.code, "no code in the redirect");
      assert.deepEqual(r.all("state"), [provider.lastState]);
      assert.deepEqual(r.all("iss"), [base]);
      st.diagnostic(`person: ${sdk.person.steps.join("; ")}`);
    },
    { independent: true },
  );

  await step(
    "SDK: transport.finishAuth(code) exchanges the code for tokens",
    async () => {
      const transport = new StreamableHTTPClientTransport(new URL(buyerUrl), { authProvider: provider });
      await transport.finishAuth(sdk.code);
      const tokens = provider.tokens();
      assert.ok(tokens?.access_token, "no access token saved");
      assert.ok(tokens.refresh_token, "no refresh token saved");
      assert.equal(tokens.token_type.toLowerCase(), "bearer");
      assert.equal(tokens.scope, "intents");
      sdk.tokens = tokens;
    },
    { independent: true, needs: () => sdk.code },
  );

  // ---------------------------------------------------------------------------
  // MCP with the token (these depend on each other).
  const mcp = { intent: null, bobIntent: null, bobClient: null };

  await step(
    "SDK: connect to /mcp/buyer with the token; tools/list is the buyer endpoint's",
    async () => {
      const client = new Client({ name: "isto-e2e-oauth", version: "0.0.0" });
      const transport = new StreamableHTTPClientTransport(new URL(buyerUrl), { authProvider: provider });
      await client.connect(transport);
      clients.push(client);
      const names = (await client.listTools()).tools.map((x) => x.name);
      for (const name of BUYER_TOOLS) {
        assert.ok(names.includes(name), `tools/list of /mcp/buyer lacks ${name}: ${names.join(", ")}`);
      }
      sdk.client = client;
    },
    { needs: () => sdk.tokens },
  );

  await step("intent_publish_intent → active at once (consent accepted at sign-up)", async () => {
    const out = await toolOutcome(sdk.client, "intent_publish_intent", {
      statement: "Hledám Škoda Octavia Combi, diesel, do 300 000 Kč",
      area: "CZ-64",
      budget: { max: 300000, currency: "CZK" },
    });
    assert.equal(out.isError, false, `publish failed: ${out.text}`);
    const intent = out.res.structuredContent?.intent;
    assert.ok(intent?.id, `no intent in the result: ${out.text}`);
    assert.equal(intent.status, "active", `status ${intent.status}: ${out.text}`);
    assert.ok(!out.res.structuredContent.consentUrl, `an active intent must not carry a consentUrl: ${out.text}`);
    mcp.intent = intent;
  });

  await step("intent_get_intent {id} → the same intent, active", async () => {
    const out = await toolOutcome(sdk.client, "intent_get_intent", { id: mcp.intent.id });
    assert.equal(out.isError, false, `get failed: ${out.text}`);
    assert.equal(out.res.structuredContent.intent.id, mcp.intent.id);
    assert.equal(out.res.structuredContent.intent.status, "active");
  });

  await step("intent_list_matches {intent} → {matches, nextSince}", async () => {
    const out = await toolOutcome(sdk.client, "intent_list_matches", { intent: mcp.intent.id });
    assert.equal(out.isError, false, `list_matches failed: ${out.text}`);
    assert.ok(Array.isArray(out.res.structuredContent.matches), out.text);
    assert.ok("nextSince" in out.res.structuredContent, out.text);
  });

  await step("another person's intent id → not_found (get, list_matches, withdraw)", async () => {
    const bobGrant = await codeGrant(isto, bob.browser, bob, rawClient, {
      redirectUri: await redirectAt(),
      resource: buyerUrl,
    });
    assert.equal(bobGrant.token.status, 200, JSON.stringify(bobGrant.token.body));
    const bobClient = new Client({ name: "isto-e2e-oauth-bob", version: "0.0.0" });
    await bobClient.connect(
      new StreamableHTTPClientTransport(new URL(buyerUrl), {
        requestInit: { headers: { Authorization: `Bearer ${bobGrant.token.body.access_token}` } },
      }),
    );
    clients.push(bobClient);
    const pub = await toolOutcome(bobClient, "intent_publish_intent", { statement: "Hľadám byt 2+1 v Bratislave", area: "SK-BL" });
    assert.equal(pub.isError, false, `Bob's publish failed: ${pub.text}`);
    const bobId = pub.res.structuredContent.intent.id;
    for (const [tool, args] of [
      ["intent_get_intent", { id: bobId }],
      ["intent_list_matches", { intent: bobId }],
      ["intent_withdraw_intent", { id: bobId }],
    ]) {
      const out = await toolOutcome(sdk.client, tool, args);
      assert.equal(out.isError, true, `${tool} on another person's intent succeeded: ${out.text}`);
      assert.match(out.text, /not_found/, `${tool}: ${out.text}`);
    }
    const still = await toolOutcome(bobClient, "intent_get_intent", { id: bobId });
    assert.equal(still.res?.structuredContent?.intent?.status, "active", `Bob's intent changed: ${still.text}`);
  });

  await step("intent_withdraw_intent {id} → withdrawn", async () => {
    const out = await toolOutcome(sdk.client, "intent_withdraw_intent", { id: mcp.intent.id });
    assert.equal(out.isError, false, `withdraw failed: ${out.text}`);
    assert.equal(out.res.structuredContent.status, "withdrawn");
    const after = await toolOutcome(sdk.client, "intent_get_intent", { id: mcp.intent.id });
    assert.equal(after.res?.structuredContent?.intent?.status, "withdrawn", after.text);
  });

  // ---------------------------------------------------------------------------
  // Token binding and the token endpoint (independent of the MCP steps).

  await step(
    "the /mcp/buyer access token is refused on /mcp/seller",
    async (st) => {
      const token = sdk.tokens.access_token;
      const res = await initializeWith(sellerUrl, token);
      // /mcp/seller may not be mounted yet; an unmounted path answers 404. Once it is
      // mounted it must answer 401: the token is bound to the resource /mcp/buyer.
      assert.ok(
        res.status === 401 || res.status === 404,
        `/mcp/seller answered ${res.status} to a /mcp/buyer token: ${res.body.slice(0, 300)}`,
      );
      if (res.status === 401) {
        const p = bearerParams(res.headers["www-authenticate"]);
        assert.equal(p?.error, "invalid_token", `challenge: ${res.headers["www-authenticate"]}`);
        assert.equal(p?.resource_metadata, `${base}/.well-known/oauth-protected-resource/mcp/seller`);
      } else {
        st.diagnostic("/mcp/seller is not mounted (404)");
      }
    },
    { independent: true, needs: () => sdk.tokens },
  );

  const revoked = []; // access tokens whose grant was revoked, checked at the end

  await step(
    "refresh token reuse: again within the grace window the same pair; after it invalid_grant, and the rotated token is revoked",
    async () => {
      const g = await codeGrant(isto, alice.browser, alice, rawClient, { redirectUri: await redirectAt(), resource: buyerUrl });
      assert.equal(g.token.status, 200, JSON.stringify(g.token.body));
      const rt0 = g.token.body.refresh_token;
      assert.ok(rt0, "no refresh token issued");
      const refresh = (rt) => tokenRequest(base, { grant_type: "refresh_token", refresh_token: rt, client_id: rawClient.client_id });
      const first = await refresh(rt0);
      assert.equal(first.status, 200, `first refresh: ${JSON.stringify(first.body)}`);
      const rt1 = first.body.refresh_token;
      assert.ok(rt1 && rt1 !== rt0, "the refresh token was not rotated");
      assert.equal(first.headers.get("cache-control"), "no-store");
      const again = await refresh(rt0);
      assert.equal(again.status, 200, `within the grace window: ${JSON.stringify(again.body)}`);
      assert.equal(again.body.access_token, first.body.access_token);
      assert.equal(again.body.refresh_token, rt1);
      // The time window under test: the reuse grace window passes.
      await new Promise((r) => setTimeout(r, GRACE_SECS * 1000 + 1200));
      const second = await refresh(rt0);
      assert.equal(second.status, 400, `reused refresh token: ${JSON.stringify(second.body)}`);
      assert.equal(second.body.error, "invalid_grant");
      const rotated = await refresh(rt1);
      assert.equal(rotated.status, 400, `the rotated refresh token still works after reuse: ${JSON.stringify(rotated.body)}`);
      assert.equal(rotated.body.error, "invalid_grant");
      revoked.push(["access token of a refresh family revoked by reuse", first.body.access_token]);
    },
    { independent: true },
  );

  await step(
    "wrong redirect_uri: refused on the holder's page (no redirect), and at the token endpoint",
    async () => {
      for (const uri of ["https://attacker.example/callback", "http://127.0.0.1:5555/other", "http://localhost/callback"]) {
        const { challenge } = pkcePair();
        const url = authorizeUrl(base, {
          response_type: "code",
          client_id: rawClient.client_id,
          redirect_uri: uri,
          state: newState(),
          code_challenge: challenge,
          code_challenge_method: "S256",
          resource: buyerUrl,
        });
        const out = await actAsPerson(alice.browser, url, { credentials: alice });
        assert.equal(out.kind, "page", `redirect_uri ${uri}: redirected to ${out.location}`);
        assert.equal(out.status, 400, `redirect_uri ${uri}: HTTP ${out.status}`);
        assert.match(out.text, /redirect_uri/, out.text.slice(0, 300));
      }
      const g = await codeGrant(isto, alice.browser, alice, rawClient, {
        redirectUri: "http://127.0.0.1:40001/callback",
        resource: buyerUrl,
        exchange: false,
      });
      const res = await tokenRequest(base, {
        grant_type: "authorization_code",
        code: g.code,
        redirect_uri: "http://127.0.0.1:40002/callback",
        code_verifier: g.verifier,
        client_id: rawClient.client_id,
      });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error, "invalid_grant");
    },
    { independent: true },
  );

  await step(
    "PKCE: missing code_challenge and code_challenge_method=plain are invalid_request; no code_verifier at the token endpoint too",
    async () => {
      const { verifier, challenge } = pkcePair();
      const cases = [
        ["no code_challenge", { code_challenge: undefined, code_challenge_method: undefined }],
        ["code_challenge without a method", { code_challenge: challenge, code_challenge_method: undefined }],
        ["code_challenge_method=plain", { code_challenge: verifier, code_challenge_method: "plain" }],
      ];
      for (const [what, pkce] of cases) {
        const state = newState();
        const redirectUri = await redirectAt();
        const url = authorizeUrl(base, {
          response_type: "code",
          client_id: rawClient.client_id,
          redirect_uri: redirectUri,
          state,
          resource: buyerUrl,
          ...pkce,
        });
        const out = await actAsPerson(alice.browser, url, { credentials: alice });
        assert.equal(out.kind, "redirect", `${what}: no redirect back (HTTP ${out.status}: ${out.text?.slice(0, 200)})`);
        const r = parseRedirect(out.location);
        assert.equal(`${r.url.origin}${r.url.pathname}`, redirectUri);
        assert.equal(r.get("error"), "invalid_request", `${what}: ${out.location}`);
        assert.equal(r.get("code"), null, `${what}: a code was issued`);
        assert.equal(r.get("state"), state);
        assert.equal(r.get("iss"), base);
      }
      const g = await codeGrant(isto, alice.browser, alice, rawClient, { redirectUri: await redirectAt(), resource: buyerUrl, exchange: false });
      const res = await tokenRequest(base, {
        grant_type: "authorization_code",
        code: g.code,
        redirect_uri: g.redirectUri,
        client_id: rawClient.client_id,
      });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error, "invalid_request");
      const wrong = await tokenRequest(base, {
        grant_type: "authorization_code",
        code: g.code,
        redirect_uri: g.redirectUri,
        code_verifier: pkcePair().verifier,
        client_id: rawClient.client_id,
      });
      assert.equal(wrong.status, 400, JSON.stringify(wrong.body));
      assert.equal(wrong.body.error, "invalid_grant");
    },
    { independent: true },
  );

  await step(
    "replayed code: the second exchange is invalid_grant and revokes what the first issued",
    async () => {
      const g = await codeGrant(isto, alice.browser, alice, rawClient, { redirectUri: await redirectAt(), resource: buyerUrl });
      assert.equal(g.token.status, 200, JSON.stringify(g.token.body));
      const again = await tokenRequest(base, {
        grant_type: "authorization_code",
        code: g.code,
        redirect_uri: g.redirectUri,
        code_verifier: g.verifier,
        client_id: rawClient.client_id,
      });
      assert.equal(again.status, 400, JSON.stringify(again.body));
      assert.equal(again.body.error, "invalid_grant");
      const refresh = await tokenRequest(base, {
        grant_type: "refresh_token",
        refresh_token: g.token.body.refresh_token,
        client_id: rawClient.client_id,
      });
      assert.equal(refresh.status, 400, `the refresh token of a replayed code still works: ${JSON.stringify(refresh.body)}`);
      assert.equal(refresh.body.error, "invalid_grant");
      revoked.push(["access token of a replayed code", g.token.body.access_token]);
    },
    { independent: true },
  );

  await step(
    "wrong resource: invalid_target at authorize and token; a buyer cannot authorize /mcp/seller",
    async () => {
      for (const resource of ["https://attacker.example/mcp", `${base}/mcp`, `${base}/mcp/buyer/x`]) {
        const state = newState();
        const redirectUri = await redirectAt();
        const url = authorizeUrl(base, {
          response_type: "code",
          client_id: rawClient.client_id,
          redirect_uri: redirectUri,
          state,
          code_challenge: pkcePair().challenge,
          code_challenge_method: "S256",
          resource,
        });
        const out = await actAsPerson(alice.browser, url, { credentials: alice });
        assert.equal(out.kind, "redirect", `resource ${resource}: HTTP ${out.status}: ${out.text?.slice(0, 200)}`);
        const r = parseRedirect(out.location);
        assert.equal(r.get("error"), "invalid_target", `resource ${resource}: ${out.location}`);
        assert.equal(r.get("code"), null);
        assert.equal(r.get("state"), state);
      }
      // A buyer account asked for the seller resource: the holder's wrong-account page.
      const url = authorizeUrl(base, {
        response_type: "code",
        client_id: rawClient.client_id,
        redirect_uri: await redirectAt(),
        state: newState(),
        code_challenge: pkcePair().challenge,
        code_challenge_method: "S256",
        resource: sellerUrl,
      });
      const out = await actAsPerson(alice.browser, url, { credentials: alice });
      assert.equal(out.kind, "page", `a buyer authorizing /mcp/seller was redirected: ${out.location}`);
      assert.equal(out.status, 403, out.text?.slice(0, 300));
      // A buyer code exchanged for another resource.
      const g = await codeGrant(isto, alice.browser, alice, rawClient, { redirectUri: await redirectAt(), resource: buyerUrl, exchange: false });
      for (const resource of [sellerUrl, "https://attacker.example/mcp"]) {
        const res = await tokenRequest(base, {
          grant_type: "authorization_code",
          code: g.code,
          redirect_uri: g.redirectUri,
          code_verifier: g.verifier,
          client_id: rawClient.client_id,
          resource,
        });
        assert.equal(res.status, 400, `resource ${resource}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.error, "invalid_target", `resource ${resource}`);
      }
    },
    { independent: true },
  );

  await step(
    "revoked access tokens are refused on /mcp/buyer (401 invalid_token)",
    async () => {
      for (const [what, token] of revoked) {
        const res = await initializeWith(buyerUrl, token);
        assert.equal(res.status, 401, `${what}: /mcp/buyer answered ${res.status}: ${res.body.slice(0, 200)}`);
        assert.equal(bearerParams(res.headers["www-authenticate"])?.error, "invalid_token", `${what}: ${res.headers["www-authenticate"]}`);
      }
    },
    { independent: true, needs: () => revoked.length > 0 },
  );
}));
