// Rate limits against the real binary: over-limit calls get HTTP 429
// with Retry-After, other addresses and /healthz are not affected, and an assistant that
// waits Retry-After is served again.
//
// The limits are set low through a config file (ISTO_CONFIG) so that the test is fast.
// Loopback only; every loop is bounded in count and the whole file in time. Different
// client addresses are simulated with X-Forwarded-For, which isto believes from its
// default trusted proxy, loopback.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import test from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { httpRequest, initializeBody, withIsto } from "./lib/harness.mjs";

// One request a second sustained, small bursts: the whole file runs in seconds.
const CONFIG = `
[limits]
mcp_requests_per_minute = 60
mcp_burst = 5
page_requests_per_minute = 60
page_burst = 3
oauth_requests_per_minute = 60
oauth_burst = 3
`;

/** Starts isto with the low limits of CONFIG. */
async function startLimited(env) {
  const config = path.join(env.work, "isto.toml");
  fs.writeFileSync(config, CONFIG);
  return env.start({ env: { ISTO_CONFIG: config } });
}

/** A POST of an MCP initialize to `/mcp` from client address `from`. */
function initialize(isto, from) {
  const u = new URL(isto.mcpUrl);
  return httpRequest(isto.mcpUrl, {
    method: "POST",
    headers: {
      Host: u.host,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "X-Forwarded-For": from,
    },
    body: initializeBody(),
  });
}

/** A GET of `pathname` from client address `from`. */
function get(isto, pathname, from) {
  const u = new URL(isto.baseUrl);
  return httpRequest(`${isto.baseUrl}${pathname}`, { headers: { Host: u.host, "X-Forwarded-For": from } });
}

/** Sends `send()` until it answers 429 (at most `max` times); the 429 and the count of successes. */
async function untilLimited(send, max) {
  let ok = 0;
  for (let i = 0; i < max; i++) {
    const res = await send();
    if (res.status === 429) return { res, ok };
    assert.ok(res.status < 400, `unexpected ${res.status}: ${res.body}`);
    ok++;
  }
  assert.fail(`no 429 after ${max} requests`);
}

function assertTooMany(res) {
  assert.equal(res.status, 429, res.body);
  const after = Number(res.headers["retry-after"]);
  assert.ok(Number.isInteger(after) && after >= 1 && after <= 60, `Retry-After: ${res.headers["retry-after"]}`);
  assert.match(res.body, /wait \d+ s .*try again/i);
  return after;
}

test("over the limit: 429 with Retry-After, per address and bucket, /healthz never", { timeout: 120_000 }, (t) =>
  withIsto(t, { prefix: "isto-rate-", smtp: false, start: false }, async (env) => {
    const isto = await startLimited(env);
    const a = "192.0.2.10";

    // MCP: the burst of 5, then 429.
    const mcp = await untilLimited(() => initialize(isto, a), 20);
    assert.ok(mcp.ok >= 4 && mcp.ok <= 6, `served ${mcp.ok} before the 429`);
    const after = assertTooMany(mcp.res);

    // Another address is served; so is the same address on the pages and OAuth.
    assert.equal((await initialize(isto, "192.0.2.11")).status, 200);
    assert.equal((await get(isto, "/", a)).status, 200);
    assert.equal((await get(isto, "/.well-known/oauth-authorization-server", a)).status, 200);

    // /healthz is never limited, even from the limited address.
    for (let i = 0; i < 30; i++) assert.equal((await get(isto, "/healthz", a)).status, 200);

    // Pages and OAuth have their own buckets: each limited after its burst of 3.
    const pages = await untilLimited(() => get(isto, "/", "192.0.2.20"), 20);
    assert.ok(pages.ok >= 2 && pages.ok <= 4, `pages: served ${pages.ok}`);
    assertTooMany(pages.res);
    const meta = await untilLimited(() => get(isto, "/.well-known/oauth-protected-resource", "192.0.2.21"), 20);
    assert.ok(meta.ok >= 2 && meta.ok <= 4, `oauth: served ${meta.ok}`);
    assertTooMany(meta.res);
    assert.equal(meta.res.headers["access-control-expose-headers"], "Retry-After");

    // IPv6 counts per /64: another address in the same /64 is the same client.
    await untilLimited(() => initialize(isto, "2001:db8:1:2::1"), 20);
    assert.equal((await initialize(isto, "2001:db8:1:2::ffff")).status, 429);
    assert.equal((await initialize(isto, "2001:db8:1:3::1")).status, 200);

    // Waiting Retry-After seconds is enough to be served again (the wait under test).
    await new Promise((r) => setTimeout(r, after * 1000));
    assert.equal((await initialize(isto, a)).status, 200);

    // The access log has the 429s, never an address.
    const log = await isto.settledLog();
    assert.match(log, /status=429/);
    assert.ok(!log.includes("192.0.2.10"), "a client address reached the log");
  }),
);

test("an assistant that waits Retry-After is served again", { timeout: 120_000 }, (t) =>
  withIsto(t, { prefix: "isto-rate-sdk-", smtp: false, start: false }, async (env) => {
    const isto = await startLimited(env);
    // The official SDK client with a fetch that, on 429, waits Retry-After and retries
    // (at most 5 times per request), as the README tells assistants to do.
    const seen = { limited: 0, waited: 0 };
    const patientFetch = async (url, init) => {
      for (let attempt = 0; ; attempt++) {
        const res = await fetch(url, init);
        if (res.status !== 429 || attempt >= 5) return res;
        seen.limited++;
        const after = Number(res.headers.get("retry-after"));
        assert.ok(Number.isInteger(after) && after >= 1, `Retry-After: ${res.headers.get("retry-after")}`);
        await res.arrayBuffer();
        seen.waited += after;
        await new Promise((r) => setTimeout(r, after * 1000)); // the client's Retry-After wait, under test
      }
    };
    const client = new Client({ name: "isto-e2e-patient", version: "0.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL(isto.mcpUrl), { fetch: patientFetch });
    await client.connect(transport);
    env.defer(() => client.close());

    // Twelve calls at once-a-second with a burst of 5: some are limited, all are served.
    const started = Date.now();
    for (let i = 0; i < 12; i++) {
      const tools = await client.listTools();
      assert.ok(tools.tools.length > 0);
    }
    assert.ok(seen.limited > 0, "the burst should have been exceeded");
    assert.ok(Date.now() - started < 60_000, "the calls took too long");
    // The session survived the 429s: a tool call still works in it.
    const res = await client.callTool({ name: "intent_search_offers", arguments: { statement: "Škoda Octavia" } });
    assert.ok(!res.isError, JSON.stringify(res));
    t.diagnostic(`429s: ${seen.limited}, waited ${seen.waited} s`);
  }),
);
