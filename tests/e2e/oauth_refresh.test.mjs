// The refresh-token grace window (PROTOCOL.md §7) with the official
// MCP TypeScript SDK's OAuth client: five parallel refreshes with one refresh token all
// get the same new pair, and it works; a lost response retried with the old token (the
// SDK's own refresh, from a provider still holding it) gets that pair again; after the
// window the old token revokes the whole grant.
//
// The window is set to 3 s through a config file (ISTO_CONFIG), so the test waits
// seconds, not the default 30. Loopback only; every loop is bounded.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import test from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { auth, discoverAuthorizationServerMetadata, refreshAuthorization } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { freePort, httpRequest, initializeBody, withIsto } from "./lib/harness.mjs";
import { actAsPerson, MemoryOAuthProvider, parseRedirect, signUpBuyer } from "./lib/oauth.mjs";

const GRACE_SECS = 3;
const CONFIG = `
[limits]
refresh_grace_secs = ${GRACE_SECS}
`;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The status of a raw MCP initialize on `url` with `token`. */
async function initializeStatus(url, token) {
  const u = new URL(url);
  const res = await httpRequest(url, {
    method: "POST",
    headers: {
      Host: u.host,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      Authorization: `Bearer ${token}`,
    },
    body: initializeBody(),
  });
  return res.status;
}

/** The tool names of /mcp/buyer through the SDK with `provider`'s tokens. */
async function toolNames(url, provider) {
  const client = new Client({ name: "isto-e2e-refresh", version: "0.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
  try {
    return (await client.listTools()).tools.map((t) => t.name);
  } finally {
    await client.close().catch(() => {});
  }
}

test("OAuth refresh grace window with the SDK: parallel refreshes, a lost response, reuse after the window", { timeout: 90000 }, (t) =>
  withIsto(t, { prefix: "isto-oauth-refresh-", start: false }, async (env) => {
    const config = path.join(env.work, "isto.toml");
    fs.writeFileSync(config, CONFIG);
    const isto = await env.start({ env: { ISTO_CONFIG: config } });
    const base = isto.baseUrl;
    const buyerUrl = `${base}/mcp/buyer`;
    const alice = await signUpBuyer(isto, env.smtp);

    // The SDK's auth(): registration, the person's sign-in and Allow, the code exchange.
    let code = null;
    const provider = new MemoryOAuthProvider({
      redirectUrl: `http://127.0.0.1:${await freePort()}/callback`,
      clientMetadata: {
        client_name: "isto e2e refresh client",
        redirect_uris: [],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
      },
      onRedirect: async (url) => {
        const outcome = await actAsPerson(alice.browser, url.href, { credentials: alice });
        assert.equal(outcome.kind, "redirect", `authorization: HTTP ${outcome.status} ${outcome.text?.slice(0, 300)}`);
        code = parseRedirect(outcome.location).get("code");
      },
    });
    provider.clientMetadata.redirect_uris.push(String(provider.redirectUrl));
    assert.equal(await auth(provider, { serverUrl: new URL(buyerUrl) }), "REDIRECT");
    assert.ok(code, "no code");
    assert.equal(await auth(provider, { serverUrl: new URL(buyerUrl), authorizationCode: code }), "AUTHORIZED");
    const first = provider.tokens();
    assert.ok(first?.refresh_token, "no refresh token");

    const metadata = await discoverAuthorizationServerMetadata(new URL(base));
    const refresh = (refreshToken) =>
      refreshAuthorization(new URL(base), {
        metadata,
        clientInformation: provider.clientInformation(),
        refreshToken,
        resource: new URL(buyerUrl),
      });

    // Five parallel refreshes with the same refresh token: one pair for all.
    const rotatedAt = Date.now();
    const answers = await Promise.all(Array.from({ length: 5 }, () => refresh(first.refresh_token)));
    const pair = answers[0];
    assert.notEqual(pair.refresh_token, first.refresh_token, "not rotated");
    for (const a of answers) {
      assert.equal(a.access_token, pair.access_token, "parallel refreshes got different access tokens");
      assert.equal(a.refresh_token, pair.refresh_token, "parallel refreshes got different refresh tokens");
    }
    // And it works: the SDK client connects with it.
    provider.saveTokens(pair);
    assert.ok((await toolNames(buyerUrl, provider)).includes("intent_publish_intent"));

    // A lost response: 1 s later the SDK, still holding the old token, refreshes with it
    // (its own auth() path) and gets the same pair.
    await sleep(1000); // the scenario's delay: a retry 1 s later, inside the grace window
    provider.saveTokens(first);
    assert.equal(await auth(provider, { serverUrl: new URL(buyerUrl) }), "AUTHORIZED");
    assert.equal(provider.tokens().access_token, pair.access_token, "the retried refresh minted another access token");
    assert.equal(provider.tokens().refresh_token, pair.refresh_token, "the retried refresh minted another refresh token");
    assert.ok((await toolNames(buyerUrl, provider)).includes("intent_get_intent"));

    // After the window the old token is a reuse: invalid_grant, and the grant is revoked.
    const wait = rotatedAt + GRACE_SECS * 1000 + 1500 - Date.now();
    if (wait > 0) await sleep(wait); // the time window under test: the grace window passes
    await assert.rejects(refresh(first.refresh_token), (e) => /invalid_grant|already used/i.test(`${e?.name} ${e?.message}`));
    assert.equal(await initializeStatus(buyerUrl, pair.access_token), 401, "the pair survived a reuse after the window");
    await assert.rejects(refresh(pair.refresh_token), (e) => /invalid_grant|revoked|already used/i.test(`${e?.name} ${e?.message}`));
  }),
);
