// Slow bodies, held streams and the open-file limit, against the real binary on loopback
// with several source addresses (127.0.0.x):
//   - for 90 s one address trickles request bodies at 1 byte per 5 s on as many
//     connections as it can open, a client behind the trusted proxy does the same, and
//     another address holds as many `GET /mcp` event streams as it can on 32 sessions;
//     meanwhile `/healthz` and an MCP `initialize` from two other addresses are answered
//     within 1 s, every time (a body's total deadline, connections per address with the
//     streams counted, the last free slots kept from one address);
//   - started with a soft open-file limit of 1024 under a higher hard one, isto runs with
//     the hard one;
//   - started with a hard limit of 512, isto warns and serves fewer connections
//     (256), so that a flood of 700 half-open connections never exhausts its descriptors
//     and `/healthz` is answered within 1 s.
//
// Every loop is bounded in count and in time; everything listens on 127.0.0.1.
// Needs: the isto binary (ISTO_BIN or target/debug/isto); no SMTP server, no data set.

import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import test from "node:test";

import { initializeBody, waitAccepted, withIsto } from "./lib/harness.mjs";

const delay = (ms) => new Promise((r) => setTimeout(r, ms));

const ATTACK_MS = 90000;
const PROBE_LIMIT_MS = 1000;
/** Most connections each attacker keeps open at once, and how fast it opens them. */
const ATTACK_OPEN_MAX = 1100;
const ATTACK_OPEN_EVERY_MS = 25;

const TRICKLER = "127.0.0.2";
const STREAMER = "127.0.0.3";
const HEALTH_PROBE = "127.0.0.4";
const MCP_PROBE = "127.0.0.5";
// Behind the trusted proxy 127.0.0.1.
const PROXIED_TRICKLER = "198.51.100.7";

// Only 127.0.0.1 is a trusted proxy: the other loopback addresses are clients of their own.
// The request rates are lifted so that the per-address rate limits cannot be what stops
// the attack.
const CONFIG = `
trusted_proxies = ["127.0.0.1"]
[limits]
mcp_requests_per_minute = 1000000
mcp_burst = 100000
page_requests_per_minute = 1000000
page_burst = 100000
`;

/** The soft and hard limits on open files of process `pid`. */
function openFileLimits(pid = "self") {
  const m = fs.readFileSync(`/proc/${pid}/limits`, "utf8").match(/^Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/m);
  const n = (v) => (v === "unlimited" ? Infinity : Number(v));
  return m ? { soft: n(m[1]), hard: n(m[2]) } : { soft: Infinity, hard: Infinity };
}

/** Open file descriptors of process `pid`. */
const openFiles = (pid) => fs.readdirSync(`/proc/${pid}/fd`).length;

/**
 * One HTTP request on a fresh connection from `localAddress`, answered in full within
 * `limitMs`: resolves {status, body, ms}; rejects on an error or when the time is up.
 */
function timedRequest(isto, { localAddress, method = "GET", pathname, headers = {}, body, limitMs }) {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: "127.0.0.1",
        port: isto.port,
        localAddress,
        path: pathname,
        method,
        agent: false,
        headers: { Connection: "close", ...(body !== undefined ? { "Content-Length": Buffer.byteLength(body) } : {}), ...headers },
      },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => {
          clearTimeout(timer);
          resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString("utf8"), ms: performance.now() - t0 });
        });
        res.on("error", reject);
      },
    );
    const timer = setTimeout(() => req.destroy(new Error(`no full answer within ${limitMs} ms`)), limitMs);
    req.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** Runs `probe()` every `everyMs` until `until` (ms since epoch); records each outcome. */
async function probeLoop(name, everyMs, until, probe, record) {
  while (Date.now() < until) {
    const started = Date.now();
    const at = ((started - record.t0) / 1000).toFixed(1);
    try {
      const r = await probe();
      record.ms.push(r.ms);
      if (!r.ok) record.failures.push(`${name} at ${at} s: ${r.what}`);
    } catch (e) {
      record.failures.push(`${name} at ${at} s: ${e.message}`);
    }
    await delay(Math.max(0, everyMs - (Date.now() - started))); // the probes' pace, not a synchronisation
  }
}

/**
 * An attacker that opens a connection from `localAddress` every ATTACK_OPEN_EVERY_MS
 * (while fewer than ATTACK_OPEN_MAX are open and until `until`), each sending `head` and
 * then `drip()` every `dripMs`; counts what happens to them.
 */
function attacker(isto, { localAddress, head, drip, dripMs, until }) {
  const stats = { opened: 0, open: 0, maxOpen: 0, refused: 0, closed: 0, sockets: new Set() };
  const launch = () => {
    const s = net.connect({ host: "127.0.0.1", port: isto.port, localAddress });
    stats.sockets.add(s);
    stats.opened++;
    stats.open++;
    stats.maxOpen = Math.max(stats.maxOpen, stats.open);
    let first = "";
    let dripper = null;
    s.on("error", () => {});
    s.on("data", (d) => {
      if (first.length < 16) first += d.toString("latin1");
    });
    s.once("connect", () => {
      s.write(head());
      if (drip) dripper = setInterval(() => s.write(drip()), dripMs);
    });
    s.once("close", () => {
      clearInterval(dripper);
      stats.sockets.delete(s);
      stats.open--;
      stats.closed++;
      if (first.startsWith("HTTP/1.1 429")) stats.refused++;
    });
  };
  const timer = setInterval(() => {
    if (Date.now() >= until) return clearInterval(timer);
    if (stats.open < ATTACK_OPEN_MAX) launch();
  }, ATTACK_OPEN_EVERY_MS);
  stats.stop = () => {
    clearInterval(timer);
    for (const s of stats.sockets) s.destroy();
  };
  return stats;
}

/** MCP headers for a session of the 2025-11-25 revision. */
const sessionHeaders = (sid) => ({ "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25" });

test(
  "90 s of trickled bodies and held streams: /healthz and initialize from other addresses answered within 1 s",
  { timeout: 150000 },
  (t) =>
    withIsto(t, { prefix: "isto-slow-abuse-", smtp: false, start: false }, async (env) => {
      const config = path.join(env.work, "isto.toml");
      fs.writeFileSync(config, CONFIG);
      const isto = await env.start({ env: { ISTO_CONFIG: config } });
      const mine = openFileLimits().soft;
      assert.ok(mine > 2 * ATTACK_OPEN_MAX + 500, `this test needs more than ${2 * ATTACK_OPEN_MAX + 500} open files (limit ${mine})`);

      // The streamer's 32 sessions (its per-address session cap), made before the attack.
      const sessions = [];
      for (let i = 0; i < 32; i++) {
        const res = await new Promise((resolve, reject) => {
          const req = http.request(
            {
              host: "127.0.0.1",
              port: isto.port,
              localAddress: STREAMER,
              path: "/mcp",
              method: "POST",
              agent: false,
              headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", Connection: "close" },
            },
            (r) => {
              r.resume();
              r.on("end", () => resolve(r.headers["mcp-session-id"]));
            },
          );
          req.on("error", reject);
          req.end(initializeBody(i + 1));
        });
        assert.ok(res, "initialize gave a session id");
        const note = await timedRequest(isto, {
          localAddress: STREAMER,
          method: "POST",
          pathname: "/mcp",
          headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", ...sessionHeaders(res) },
          body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
          limitMs: 10000,
        });
        assert.equal(note.status, 202, `notifications/initialized: ${note.status} ${note.body}`);
        sessions.push(res);
      }

      const t0 = Date.now();
      const until = t0 + ATTACK_MS;
      const host = `Host: 127.0.0.1:${isto.port}\r\n`;
      const trickleHead = (xff) => () =>
        `POST /mcp HTTP/1.1\r\n${host}${xff ? `X-Forwarded-For: ${xff}\r\n` : ""}Content-Type: application/json\r\n` +
        `Accept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{`;
      let nextSession = 0;
      const attackers = {
        trickler: attacker(isto, { localAddress: TRICKLER, head: trickleHead(null), drip: () => " ", dripMs: 5000, until }),
        proxied: attacker(isto, { localAddress: "127.0.0.1", head: trickleHead(PROXIED_TRICKLER), drip: () => " ", dripMs: 5000, until }),
        streamer: attacker(isto, {
          localAddress: STREAMER,
          head: () =>
            `GET /mcp HTTP/1.1\r\n${host}Accept: text/event-stream\r\nMcp-Session-Id: ${sessions[nextSession++ % sessions.length]}\r\n` +
            `MCP-Protocol-Version: 2025-11-25\r\n\r\n`,
          until,
        }),
      };
      env.defer(() => Object.values(attackers).forEach((a) => a.stop()));

      const health = { t0, ms: [], failures: [] };
      const mcp = { t0, ms: [], failures: [] };
      let held = 0;
      const sampler = setInterval(() => {
        try {
          held = Math.max(held, openFiles(isto.proc.pid));
        } catch {
          /* gone: the probes say so */
        }
      }, 1000);
      try {
        await Promise.all([
          probeLoop("/healthz", 250, until, async () => {
            const r = await timedRequest(isto, { localAddress: HEALTH_PROBE, pathname: "/healthz", limitMs: PROBE_LIMIT_MS });
            return { ok: r.status === 200 && r.body === "ok\n", what: `${r.status} ${r.body.slice(0, 200)}`, ms: r.ms };
          }, health),
          probeLoop("initialize", 500, until, async () => {
            const r = await timedRequest(isto, {
              localAddress: MCP_PROBE,
              method: "POST",
              pathname: "/mcp",
              headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
              body: initializeBody(7),
              limitMs: PROBE_LIMIT_MS,
            });
            return { ok: r.status === 200 && r.body.includes('"protocolVersion"'), what: `${r.status} ${r.body.slice(0, 200)}`, ms: r.ms };
          }, mcp),
        ]);
      } finally {
        clearInterval(sampler);
      }
      const max = (xs) => (xs.length ? Math.max(...xs) : NaN).toFixed(0);
      const summary = (a) => `opened ${a.opened}, at most ${a.maxOpen} open at once, ${a.refused} refused with 429`;
      t.diagnostic(
        `trickler (${TRICKLER}): ${summary(attackers.trickler)}; proxied trickler (${PROXIED_TRICKLER} via 127.0.0.1): ` +
          `${summary(attackers.proxied)}; streamer (${STREAMER}, 32 sessions): ${summary(attackers.streamer)}; ` +
          `isto held at most ${held} descriptors`,
      );
      t.diagnostic(
        `/healthz: ${health.ms.length} probes, slowest ${max(health.ms)} ms; initialize: ${mcp.ms.length} probes, ` +
          `slowest ${max(mcp.ms)} ms; ${health.failures.length + mcp.failures.length} failed`,
      );
      assert.deepEqual([...health.failures, ...mcp.failures].slice(0, 20), [], "every probe answered within 1 s");
      assert.ok(health.ms.length >= 200 && mcp.ms.length >= 100, "the probes ran all through the attack");
      // The attack was real: each attacker kept opening connections all along.
      for (const [name, a] of Object.entries(attackers)) {
        assert.ok(a.opened >= 1000, `${name} opened only ${a.opened} connections`);
      }
    }),
);

test("a soft open-file limit under the hard one is raised to it at start", { timeout: 60000 }, (t) => {
  const hard = openFileLimits().hard;
  if (!(hard > 1024)) {
    t.skip(`the hard open-file limit here is ${hard}: no room to start under a lower soft one`);
    return;
  }
  return withIsto(t, { prefix: "isto-nofile-soft-", smtp: false, isto: { nofile: { soft: 1024 } } }, async (env) => {
    const limits = openFileLimits(env.isto.proc.pid);
    t.diagnostic(`started with soft 1024, hard ${hard}: isto runs with soft ${limits.soft}, hard ${limits.hard}`);
    assert.equal(limits.hard, hard, "the hard limit is the one it was started with");
    assert.equal(limits.soft, hard, "the soft limit was raised to the hard one");
    assert.match(await env.isto.settledLog(), /raised the soft open-file limit to the hard limit/);
  });
});

const LOW_NOFILE = 512;
const HALF_OPEN = 700;

test("a hard open-file limit too low: a warning, fewer connections, no descriptor runs out", { timeout: 90000 }, (t) =>
  withIsto(t, { prefix: "isto-nofile-low-", smtp: false, isto: { nofile: LOW_NOFILE } }, async (env) => {
    const { isto } = env;
    const pid = isto.proc.pid;
    // A half-open flood larger than the limit: isto serves at most 256 and closes the
    // oldest half-open ones to make room, never running out of descriptors; it said so
    // at start (below).
    const sockets = [];
    env.defer(() => sockets.forEach((s) => s.destroy()));
    const started = Date.now();
    await Promise.all(
      Array.from(
        { length: HALF_OPEN },
        () =>
          new Promise((resolve) => {
            const s = net.connect({ host: "127.0.0.1", port: isto.port });
            sockets.push(s);
            s.on("error", () => {});
            s.resume();
            s.once("connect", () => s.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${isto.port}\r\nX-Slow: `, () => resolve()));
            setTimeout(resolve, 3000);
          }),
      ),
    );
    // The whole flood reached isto: it accepted every connection the kernel queued for it
    // (closing the oldest half-open ones to make room).
    await waitAccepted(isto.port);
    const fds = openFiles(pid);
    const times = [];
    for (let k = 0; k < 3; k++) {
      const r = await timedRequest(isto, { localAddress: "127.0.0.4", pathname: "/healthz", limitMs: PROBE_LIMIT_MS }).catch(
        (e) => assert.fail(`/healthz during the flood: ${e.message} (isto holds ${openFiles(pid)} descriptors)`),
      );
      assert.equal(r.status, 200);
      times.push(r.ms);
    }
    const at = (Date.now() - started) / 1000;
    t.diagnostic(
      `${HALF_OPEN} half-open connections; isto held ${fds} descriptors (limit ${LOW_NOFILE}); /healthz answered in ` +
        `${times.map((x) => x.toFixed(0)).join(", ")} ms, ${at.toFixed(1)} s after the flood began`,
    );
    assert.ok(at < 9, `measured ${at.toFixed(1)} s after the flood began: the header timeout (10 s) may have helped`);
    assert.ok(fds < LOW_NOFILE, `isto held ${fds} descriptors`);
    assert.doesNotMatch(await isto.settledLog(), /accept failed/, "isto ran out of descriptors");
    const warning = isto.log().split("\n").find((l) => l.includes("open-file limit is too low"));
    assert.ok(warning, `no warning about the open-file limit:\n${isto.log()}`);
    assert.match(warning, /WARN/);
    assert.match(warning, /max_connections=1024/);
    assert.match(warning, /serving=256/);
    t.diagnostic(warning.trim());
  }),
);
