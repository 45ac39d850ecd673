// Abuse of the public surface, as an attacker on loopback would try it,
// against the real binary:
//   - memory: 10 000 `initialize` calls on /mcp leave RSS growth under 64 MiB, and a
//     normal SDK client is served afterwards (bounded sessions);
//   - connections: 2 000 half-open connections (a partial request head, never finished)
//     leave a normal request answered within 1 s (point 1: header timeout, connection
//     cap, eviction of the longest-waiting connection without a request in flight);
//   - CPU: a 250 KB `area` is refused with a tool error naming the field and the rule in
//     under 50 ms (point 4);
//   - outbound fetches: client ID metadata document URLs naming loopback, private,
//     link-local, unspecified, IPv6 loopback and IPv4-mapped addresses (literally and
//     through `localhost`) are refused with one generic error, and a listener on that
//     port sees no connection (point 6).
// Rate limits (429 + Retry-After) are shown in ratelimit.test.mjs, the draft and
// registration quotas with their purge in quota.test.mjs.
//
// Every loop is bounded in count and in time; everything listens on 127.0.0.1.
// Needs: the isto binary (ISTO_BIN or target/debug/isto); no SMTP server, no data set.

import assert from "node:assert/strict";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import test from "node:test";

import { connectMcp, freePort, htmlText, httpRequest, initializeBody, resultText, waitAccepted, waitFor, withIsto } from "./lib/harness.mjs";

const MiB = 1024 * 1024;
const delay = (ms) => new Promise((r) => setTimeout(r, ms));

/** Resident set size of process `pid` in bytes (VmRSS of /proc/PID/status). */
function rssBytes(pid) {
  const m = fs.readFileSync(`/proc/${pid}/status`, "utf8").match(/^VmRSS:\s+(\d+)\s+kB$/m);
  assert.ok(m, `no VmRSS for ${pid}`);
  return Number(m[1]) * 1024;
}

/** The soft limit on open files of process `pid` ("self" for this one). */
function openFileLimit(pid = "self") {
  const m = fs.readFileSync(`/proc/${pid}/limits`, "utf8").match(/^Max open files\s+(\d+|unlimited)/m);
  return !m || m[1] === "unlimited" ? Infinity : Number(m[1]);
}

/** Open file descriptors of process `pid`. */
function openFiles(pid) {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

const fmtMiB = (b) => `${(b / MiB).toFixed(1)} MiB`;

/**
 * Run `task(i)` for i in 0..n with at most `width` at once; stops early (throws) when
 * `deadline` (ms since epoch) passes.
 */
async function pool(n, width, deadline, task) {
  let next = 0;
  async function worker() {
    while (next < n) {
      if (Date.now() > deadline) throw new Error(`pool: deadline passed after ${next} of ${n}`);
      await task(next++);
    }
  }
  await Promise.all(Array.from({ length: Math.min(width, n) }, worker));
}

// ---------------------------------------------------------------------------
// Memory: an initialize flood

const INITIALIZE_CALLS = 10000;
const INITIALIZE_WIDTH = 32;
const RSS_GROWTH_MAX = 64 * MiB;

/** The `i`-th client address of a flood: 198.18.0.0/15 (RFC 2544 benchmarking). */
function floodAddress(i) {
  return `198.${18 + ((i >> 16) & 1)}.${(i >> 8) & 255}.${i & 255}`;
}

test("10 000 initialize calls: RSS growth under 64 MiB, a normal client still served", { timeout: 180000 }, (t) =>
  withIsto(t, { prefix: "isto-abuse-init-", smtp: false }, async (env) => {
    const { isto } = env;
    const pid = isto.proc.pid;
    const before = rssBytes(pid);
    const statuses = new Map();
    let withSession = 0;
    let wellRefused = 0;
    let firstSession = null;
    let firstAt = 0;
    let peak = before;
    const sampler = setInterval(() => {
      try {
        peak = Math.max(peak, rssBytes(pid));
      } catch {
        /* the process is gone: the calls fail and say so */
      }
    }, 100);
    const started = Date.now();
    try {
      await pool(INITIALIZE_CALLS, INITIALIZE_WIDTH, started + 150000, async (i) => {
        const res = await fetch(isto.mcpUrl, {
          method: "POST",
          headers: {
            "Content-Type": "application/json",
            Accept: "application/json, text/event-stream",
            // Each call from its own client address (isto believes X-Forwarded-For from
            // loopback, a trusted proxy): a distributed flood, which the per-address rate
            // limit does not stop, so that the session bounds are what is tested.
            "X-Forwarded-For": floodAddress(i),
          },
          body: initializeBody(i + 1),
          signal: AbortSignal.timeout(20000),
        });
        const text = await res.text();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 503) {
          // Refused because of load: Retry-After and a JSON-RPC error naming the reason.
          const wait = Number(res.headers.get("retry-after"));
          let message = "";
          try {
            message = JSON.parse(text).error?.message ?? "";
          } catch {
            /* counted as malformed below */
          }
          if (wait >= 1 && wait <= 10 && message.includes("MCP session cap reached") && message.includes("retry later")) {
            wellRefused++;
          }
        }
        const sid = res.headers.get("mcp-session-id");
        if (sid) withSession++;
        if (i === 0) {
          firstSession = sid;
          firstAt = Date.now();
        }
      });
    } finally {
      clearInterval(sampler);
    }
    const seconds = (Date.now() - started) / 1000;
    const after = rssBytes(pid);
    peak = Math.max(peak, after);
    t.diagnostic(
      `${INITIALIZE_CALLS} initialize calls in ${seconds.toFixed(1)} s (${INITIALIZE_WIDTH} at once); ` +
        `statuses ${JSON.stringify(Object.fromEntries(statuses))}; ${withSession} got a session id; ` +
        `RSS ${fmtMiB(before)} → ${fmtMiB(after)} (growth ${fmtMiB(after - before)}, peak ${fmtMiB(peak)})`,
    );
    // Each initialize is answered: with a session (the cap closing an old session of the
    // client key holding the most), or refused because of load (503 with Retry-After and
    // a JSON-RPC error naming the session cap, never 500) while every other client's
    // session is younger than 10 s — a young session is never closed for another client.
    const refusedAtCap = statuses.get(503) ?? 0;
    assert.equal((statuses.get(200) ?? 0) + refusedAtCap, INITIALIZE_CALLS, `statuses: ${JSON.stringify(Object.fromEntries(statuses))}`);
    assert.equal(wellRefused, refusedAtCap, "every 503 has Retry-After (1..10 s) and names the session cap");
    assert.equal(withSession, statuses.get(200), "every initialize answered 200 creates a session (2025-11-25 revision)");
    assert.ok(withSession >= 256, `the flood got at least the cap of sessions (${withSession})`);
    assert.ok(after - before < RSS_GROWTH_MAX, `RSS grew by ${fmtMiB(after - before)} (limit ${fmtMiB(RSS_GROWTH_MAX)})`);
    assert.ok(peak - before < RSS_GROWTH_MAX, `RSS peaked ${fmtMiB(peak - before)} above the start`);

    // The flood's first session is closed once it is no longer young (10 s) and new
    // sessions need its room. When the flood was quicker than that, wait for the session's
    // age, then open more sessions from new addresses than the cap can hold beside it.
    if (Date.now() - firstAt < 11000) {
      await waitFor(() => Date.now() - firstAt >= 11000, { timeout: 15000, interval: 250, what: "the first session to be older than 10 s" });
      await pool(64, INITIALIZE_WIDTH, Date.now() + 30000, async (k) => {
        const res = await fetch(isto.mcpUrl, {
          method: "POST",
          headers: {
            "Content-Type": "application/json",
            Accept: "application/json, text/event-stream",
            "X-Forwarded-For": floodAddress(INITIALIZE_CALLS + k),
          },
          body: initializeBody(INITIALIZE_CALLS + k + 1),
          signal: AbortSignal.timeout(20000),
        });
        await res.arrayBuffer();
      });
    }
    // Closed (evicted at the cap, or idle): 404, after which a client starts a new session
    // (MCP transport, session management).
    const stale = await fetch(isto.mcpUrl, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
        "X-Forwarded-For": floodAddress(0),
        "Mcp-Session-Id": firstSession,
        "MCP-Protocol-Version": "2025-11-25",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
      signal: AbortSignal.timeout(10000),
    });
    await stale.arrayBuffer();
    assert.equal(stale.status, 404, "the first session of the flood is gone");

    // A normal client (the official SDK) is still served: initialize, tools/list, a call —
    // at once, or once the flood's last sessions are no longer young (10 s).
    const mcp = await waitFor(
      async () => {
        try {
          return await connectMcp(isto.mcpUrl);
        } catch {
          return null;
        }
      },
      { timeout: 30000, interval: 500, what: "a normal client's session after the flood" },
    );
    env.defer(() => mcp.close());
    const { tools } = await mcp.listTools();
    assert.ok(tools.some((x) => x.name === "intent_search_offers"), "tools/list after the flood");
    const res = await mcp.callTool("intent_search_offers", { statement: "škoda octavia", area: "CZ-64" });
    assert.ok(!res.isError, `search after the flood: ${resultText(res)}`);
  }),
);

// ---------------------------------------------------------------------------
// Connections: half-open flood

const HALF_OPEN = 2000;
// isto.service: LimitNOFILE=2048 with [limits] max_connections = 1024 (the defaults).
const SERVICE_NOFILE = 2048;

test("2 000 half-open connections: a normal request answered within 1 s", { timeout: 120000 }, (t) =>
  withIsto(t, { prefix: "isto-abuse-half-", smtp: false, isto: { nofile: SERVICE_NOFILE } }, async (env) => {
    const { isto } = env;
    const pid = isto.proc.pid;
    assert.equal(openFileLimit(pid), SERVICE_NOFILE, "isto runs with the service's LimitNOFILE");
    // This process needs a descriptor per connection (Node raises its soft limit to the
    // hard one at start).
    const mine = openFileLimit();
    assert.ok(mine > HALF_OPEN + 200, `this test needs more than ${HALF_OPEN + 200} open files (limit ${mine})`);

    const sockets = [];
    let closedByServer = 0;
    env.defer(() => sockets.forEach((s) => s.destroy()));
    // All at once, as an attacker would: each connects and sends a partial request head
    // that it never finishes. Connections the kernel cannot queue retry their SYN; the
    // flood is measured as it stands after at most 5 s, well inside the header timeout
    // (10 s), so no timeout clears it before the normal request below.
    const started = Date.now();
    const connected = await Promise.all(
      Array.from(
        { length: HALF_OPEN },
        () =>
          new Promise((resolve) => {
            const s = net.connect({ host: "127.0.0.1", port: isto.port });
            sockets.push(s);
            s.setNoDelay(true);
            s.on("error", () => {});
            s.resume(); // read, so that isto's FIN is seen ("end", then "close")
            s.once("close", () => closedByServer++);
            s.once("connect", () => {
              s.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${isto.port}\r\nX-Slow: `, () => resolve(true));
            });
            setTimeout(() => resolve(false), 5000);
          }),
      ),
    );
    const openSeconds = (Date.now() - started) / 1000;
    const nConnected = connected.filter(Boolean).length;
    await waitAccepted(isto.port); // isto has accepted every queued one (and closed some)
    const drainedAt = (Date.now() - started) / 1000;
    const fdsHeld = openFiles(pid);

    // A normal request on a fresh connection, well before any header timeout (10 s).
    const times = [];
    for (let k = 0; k < 3; k++) {
      const t0 = performance.now();
      let res;
      let body;
      try {
        res = await fetch(`${isto.baseUrl}/healthz`, { headers: { Connection: "close" }, signal: AbortSignal.timeout(3000) });
        body = await res.text();
      } catch (e) {
        const ms = (performance.now() - t0).toFixed(0);
        assert.fail(`a normal request failed after ${ms} ms (${e.name}: ${e.message}${e.cause ? `, cause: ${e.cause.code ?? ""} ${e.cause.message ?? e.cause}` : ""}); ${nConnected} connected, ${closedByServer} closed by isto`);
      }
      times.push(performance.now() - t0);
      assert.equal(res.status, 200, `healthz: ${res.status} ${body}`);
    }
    const measuredAt = (Date.now() - started) / 1000;
    t.diagnostic(
      `${nConnected} of ${HALF_OPEN} half-open connections connected and wrote a partial head within ` +
        `${openSeconds.toFixed(1)} s, all accepted by isto at ${drainedAt.toFixed(1)} s; isto held ${fdsHeld} descriptors (limit ${SERVICE_NOFILE}); ` +
        `${closedByServer} half-open ones closed by isto to make room; normal requests answered in ` +
        `${times.map((x) => x.toFixed(0)).join(", ")} ms, ${measuredAt.toFixed(1)} s after the flood began`,
    );
    assert.ok(Math.max(...times) < 1000, `a normal request took ${Math.max(...times).toFixed(0)} ms`);
    assert.ok(measuredAt < 9, `measured ${measuredAt.toFixed(1)} s after the flood began: the header timeout may have helped`);
    assert.equal(nConnected, HALF_OPEN, "every half-open connection got through the handshake and wrote its head");
    assert.ok(fdsHeld < SERVICE_NOFILE, `isto held ${fdsHeld} descriptors`);

    // And an MCP client, on the same server, from initialize to a tool call.
    const t1 = performance.now();
    const mcp = await connectMcp(isto.mcpUrl);
    env.defer(() => mcp.close());
    await mcp.listTools();
    const mcpMs = performance.now() - t1;
    t.diagnostic(
      `an SDK client connected and listed tools in ${mcpMs.toFixed(0)} ms; ` +
        `${closedByServer} half-open connections closed by isto by then`,
    );
    assert.ok(mcpMs < 3000, `the SDK client took ${mcpMs.toFixed(0)} ms`);
    // At most max_connections (1024) stay open: isto closed the oldest half-open ones to
    // make room, well before their header timeout (10 s) would have.
    const evicted = HALF_OPEN - 1024;
    const deadline = started + 9000;
    while (closedByServer < evicted && Date.now() < deadline) await delay(100);
    t.diagnostic(`${closedByServer} half-open connections closed by isto ${((Date.now() - started) / 1000).toFixed(1)} s after the flood began`);
    assert.ok(closedByServer >= evicted, `only ${closedByServer} half-open connections were closed to make room`);
    assert.ok(Date.now() - started < 90000, "the test ran within its time bound");
  }),
);

// ---------------------------------------------------------------------------
// CPU: a 250 KB area

const HUGE_AREA = "Brno ".repeat(50000); // 250 000 characters

test("a 250 KB area is refused, naming the field and the rule, in under 50 ms", { timeout: 60000 }, (t) =>
  withIsto(t, { prefix: "isto-abuse-area-", smtp: false }, async (env) => {
    const mcp = await connectMcp(env.isto.mcpUrl);
    env.defer(() => mcp.close());
    await mcp.listTools();
    const calls = {
      intent_search_offers: { statement: "škoda octavia", area: HUGE_AREA },
      intent_publish_intent: { statement: "Hledám Škoda Octavia do 300 000 Kč", area: HUGE_AREA },
    };
    for (const [tool, args] of Object.entries(calls)) {
      // Warm: the same tool with a normal area (the first call of a tool pays one-offs).
      await mcp.callTool(tool, { ...args, area: "CZ-64" });
      const times = [];
      for (let i = 0; i < 5; i++) {
        const t0 = performance.now();
        const res = await mcp.callTool(tool, args);
        times.push(performance.now() - t0);
        const text = resultText(res);
        assert.equal(res.isError, true, `${tool} with a 250 KB area did not fail: ${text.slice(0, 300)}`);
        assert.match(text, /\barea\b/, `${tool}: the error does not name the field: ${text.slice(0, 300)}`);
        assert.match(text, /at most 200 characters/, `${tool}: the error does not state the rule: ${text.slice(0, 300)}`);
        assert.ok(text.length < 2000, `${tool}: the error echoes the input (${text.length} chars)`);
      }
      const sorted = [...times].sort((a, b) => a - b);
      const median = sorted[2];
      t.diagnostic(`${tool}: 250 KB area refused in ${times.map((x) => x.toFixed(1)).join(", ")} ms (median ${median.toFixed(1)})`);
      // The median of five: one call delayed by another build on a shared machine is not
      // the server's time.
      assert.ok(median < 50, `${tool}: median ${median.toFixed(1)} ms`);
    }
  }),
);

// ---------------------------------------------------------------------------
// Outbound fetches: client ID metadata documents

/** A TCP listener on 127.0.0.1 that records every connection (and closes it). */
async function recordingListener() {
  const seen = [];
  const srv = net.createServer((s) => {
    seen.push(`${s.remoteAddress}:${s.remotePort}`);
    s.destroy();
  });
  await new Promise((resolve, reject) => {
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", resolve);
  });
  const port = srv.address().port;
  return {
    port,
    seen,
    close: () => new Promise((r) => srv.close(r)),
    /**
     * Resolves once the listener has recorded every connection made so far: it connects
     * itself and waits (bounded) until that connection is seen (connections are accepted
     * in order), then takes its own entry out of `seen` again.
     */
    async settle() {
      const own = await new Promise((resolve, reject) => {
        const s = net.connect({ host: "127.0.0.1", port }, () => resolve(`${s.localAddress}:${s.localPort}`));
        s.on("error", reject);
        s.on("close", () => {});
        s.resume();
      });
      await waitFor(() => seen.includes(own), { timeout: 5000, interval: 10, what: "the listener recording its own connection" });
      seen.splice(seen.indexOf(own), 1);
    },
  };
}

/** The URLs an attacker would give as client_id, all pointing at `port`. */
function internalUrls(port, closedPort) {
  return [
    `https://127.0.0.1:${port}/client.json`,
    `https://127.0.0.1:${closedPort}/client.json`, // a closed port answers the same
    `https://localhost:${port}/client.json`, // a name resolving to loopback
    `https://10.0.0.1:${port}/client.json`,
    `https://192.168.1.1:${port}/client.json`,
    `https://169.254.169.254:${port}/latest/meta-data`,
    `https://0.0.0.0:${port}/client.json`,
    `https://[::1]:${port}/client.json`,
    `https://[::ffff:7f00:1]:${port}/client.json`, // ::ffff:127.0.0.1, as a URL writes it
    `https://[::ffff:a00:1]:${port}/client.json`, // ::ffff:10.0.0.1
    `https://[::]:${port}/client.json`,
  ];
}

/** GET /oauth/authorize as a client would send the person there; {status, text}. */
async function authorize(isto, clientId, host) {
  const q = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: "http://127.0.0.1:9/callback",
    code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
    code_challenge_method: "S256",
    state: "abuse",
  });
  const t0 = performance.now();
  const res = await httpRequest(`${isto.baseUrl}/oauth/authorize?${q}`, {
    headers: { "Accept-Language": "en", ...(host ? { Host: host } : {}) },
  });
  return { status: res.status, text: htmlText(res.body), ms: performance.now() - t0 };
}

const GENERIC = "the client metadata document could not be fetched";

/** Every URL refused with the same page, the listener untouched. */
async function expectAllRefused(t, isto, listener, urls, { host, label }) {
  const pages = new Map();
  for (const u of urls) {
    const r = await authorize(isto, u, host);
    assert.equal(r.status, 400, `${label}: ${u}: status ${r.status}: ${r.text.slice(0, 300)}`);
    assert.ok(r.text.includes(GENERIC), `${label}: ${u}: not the generic error: ${r.text.slice(0, 400)}`);
    // One answer for every reason: the page does not depend on the address or the port.
    const normal = r.text.replaceAll(u, "URL");
    pages.set(normal, [...(pages.get(normal) ?? []), u]);
    assert.ok(r.ms < 5000, `${label}: ${u}: answered in ${r.ms.toFixed(0)} ms`);
  }
  assert.equal(pages.size, 1, `${label}: different pages for different URLs: ${JSON.stringify([...pages.values()])}`);
  await listener.settle();
  assert.deepEqual(listener.seen, [], `${label}: isto connected to the listener`);
  t.diagnostic(`${label}: ${urls.length} URLs refused with one page, 0 connections to the listener`);
}

test("client ID metadata documents on internal addresses are refused, the listener untouched", { timeout: 60000 }, (t) =>
  withIsto(t, { prefix: "isto-abuse-cimd-", smtp: false }, async (env) => {
    const listener = await recordingListener();
    env.defer(() => listener.close());
    const closedPort = await freePort();
    const urls = internalUrls(listener.port, closedPort);

    // The test set-up: a public URL on plain http (development), where isto also
    // fetches `http://` loopback documents; `https://` ones on internal addresses stay
    // refused.
    await expectAllRefused(t, env.isto, listener, urls, { label: "http public URL" });
    for (const u of [`http://10.0.0.1:${listener.port}/c.json`, `http://[::ffff:7f00:1]:${listener.port}/c.json`]) {
      const r = await authorize(env.isto, u);
      assert.equal(r.status, 400, `${u}: ${r.status}`);
    }

    const dev = env.isto;

    // A production set-up (public URL https): `http://` documents are never fetched.
    const prodData = path.join(env.work, "data-https");
    fs.mkdirSync(prodData);
    const prod = await env.start({ dataDir: prodData, env: { ISTO_PUBLIC_URL: "https://holder.example" } });
    const host = "holder.example";
    await expectAllRefused(t, prod, listener, urls, { host, label: "https public URL" });
    for (const u of [`http://127.0.0.1:${listener.port}/c.json`, `http://localhost:${listener.port}/c.json`]) {
      const r = await authorize(prod, u, host);
      assert.equal(r.status, 400, `${u}: ${r.status}: ${r.text.slice(0, 300)}`);
    }
    await listener.settle();
    assert.deepEqual(listener.seen, [], "isto connected to the listener");
    // The holder's log names the reason (for the operator), never in the page.
    assert.match(await prod.settledLog(), /client metadata document not usable/);

    // The control: the listener does see a connection isto makes. In the development
    // set-up an `http://` loopback document is fetched (the listener hangs up: the same
    // generic error).
    const control = await authorize(dev, `http://127.0.0.1:${listener.port}/client.json`);
    assert.equal(control.status, 400, `control: ${control.status}`);
    assert.ok(control.text.includes(GENERIC), `control: ${control.text.slice(0, 300)}`);
    await listener.settle();
    assert.equal(listener.seen.length, 1, "the listener records the connection of the control fetch");
    t.diagnostic("control: an http:// loopback document in the development set-up reached the listener (1 connection)");
  }),
);
