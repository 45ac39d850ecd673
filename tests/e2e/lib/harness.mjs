// Test harness for isto's end-to-end tests: free ports, a real SMTP server writing to a
// Maildir (aiosmtpd), the isto binary (serve + admin commands), an MCP client from the
// official SDK, and a tiny browser (cookies, redirects, HTML forms).
//
// Everything listens on 127.0.0.1 with ports chosen at run time; waits are polls with
// timeouts, never fixed sleeps.

import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";

export const E2E_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const REPO_ROOT = path.resolve(E2E_DIR, "../..");
export const ISTO_BIN = process.env.ISTO_BIN
  ? path.resolve(process.env.ISTO_BIN)
  : path.join(REPO_ROOT, "target", "debug", "isto");
export const PYTHON = process.env.PYTHON ?? "python3";
const MAILDIR_READER = path.join(E2E_DIR, "lib", "maildir_read.py");

// ---------------------------------------------------------------------------
// generic helpers

/** Children started by this process; killed if the test process exits early. */
const children = new Set();
process.on("exit", () => {
  for (const child of children) {
    try {
      child.kill("SIGKILL");
    } catch {
      /* already gone */
    }
  }
});

function track(child) {
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

/** A fresh temporary directory. */
export function tmpDir(prefix = "isto-e2e-") {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** `port` on 127.0.0.1 if it can be bound now (0: any free one), else null (bind, read, close). */
function bindable(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once("error", () => resolve(null));
    srv.listen(port, "127.0.0.1", () => {
      const bound = srv.address().port;
      srv.close(() => resolve(bound));
    });
  });
}

/** A free TCP port on 127.0.0.1 (bind to port 0, read it, close). */
export async function freePort() {
  const port = await bindable(0);
  if (port === null) throw new Error("no free port on 127.0.0.1");
  return port;
}

/**
 * A free TCP port on 127.0.0.1 below the ephemeral range (20000..32767), for a port
 * chosen long before something binds it (a proxy started after its backends). A port
 * from `freePort` is an ephemeral one: any outgoing connection of the machine (a test's
 * client, a database connection) may take it as its local port in between, and the
 * later bind fails with EADDRINUSE. Ports below the range are never given out that way.
 */
export async function laterPort() {
  for (let i = 0; i < 200; i++) {
    const port = await bindable(20000 + Math.floor(Math.random() * 12768));
    if (port !== null) return port;
  }
  throw new Error("no free port in 20000..32767 after 200 tries");
}

const delay = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Poll `fn` until it returns a truthy value (which is returned) or `timeout` ms pass.
 * Exceptions from `fn` count as "not yet"; the last one is reported on timeout.
 */
export async function waitFor(fn, { timeout = 30000, interval = 200, what = "condition" } = {}) {
  const deadline = Date.now() + timeout;
  let lastError;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() >= deadline) {
      const err = new Error(
        `timed out after ${timeout} ms waiting for ${what}` +
          (lastError ? ` (last error: ${lastError.message ?? lastError})` : ""),
      );
      err.cause = lastError;
      throw err;
    }
    await delay(interval);
  }
}

/**
 * Connections waiting in the kernel's accept queue of the listener on 127.0.0.1:`port`
 * (for a listening socket `/proc/net/tcp` shows that queue as `rx_queue`); null when no
 * such listener is found.
 */
export function acceptQueue(port) {
  const rows = fs.readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1);
  for (const row of rows) {
    const f = row.trim().split(/\s+/);
    if (f.length < 5 || f[3] !== "0A") continue; // 0A: LISTEN
    if (parseInt(f[1].split(":")[1], 16) !== port) continue;
    return parseInt(f[4].split(":")[1], 16);
  }
  return null;
}

/** Waits until the listener on 127.0.0.1:`port` has accepted every connection queued for it. */
export function waitAccepted(port, { timeout = 10000 } = {}) {
  return waitFor(() => acceptQueue(port) === 0, { timeout, interval: 20, what: `an empty accept queue on port ${port}` });
}

/** Resolves when a TCP connection to 127.0.0.1:port succeeds. */
function canConnect(port) {
  return new Promise((resolve) => {
    const sock = net.connect({ host: "127.0.0.1", port });
    sock.once("connect", () => {
      sock.destroy();
      resolve(true);
    });
    sock.once("error", () => resolve(false));
  });
}

/** Wait for a child process to exit (resolves with {code, signal}) or time out (null). */
function waitExit(child, timeout) {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), timeout);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal });
    });
  });
}

/** SIGTERM, then SIGKILL after `grace` ms. Resolves with the exit status. */
export async function terminate(child, grace = 10000) {
  if (!child || child.exitCode !== null || child.signalCode !== null) {
    return child ? { code: child.exitCode, signal: child.signalCode } : null;
  }
  child.kill("SIGTERM");
  const res = await waitExit(child, grace);
  if (res) return res;
  child.kill("SIGKILL");
  return waitExit(child, 5000);
}

// ---------------------------------------------------------------------------
// SMTP (aiosmtpd writing to a Maildir)

/**
 * Read all messages of a Maildir, oldest first (see maildir_read.py for the shape:
 * subject, rawSubject, from, to, rcptTo, headers, rawHeaders, text, html, key).
 */
export function readMaildir(maildir) {
  const res = spawnSync(PYTHON, [MAILDIR_READER, maildir], { encoding: "utf8", maxBuffer: 64 << 20 });
  if (res.status !== 0) {
    throw new Error(`maildir_read.py failed (${res.status}): ${res.stderr}`);
  }
  return JSON.parse(res.stdout);
}

/** True when the message was sent (envelope or To header) to `address`. */
export function mailIsFor(msg, address) {
  const a = address.toLowerCase();
  return (
    msg.rcptTo.some((r) => r.toLowerCase().includes(a)) ||
    (msg.to ?? "").toLowerCase().includes(a)
  );
}

/**
 * Start `python3 -m aiosmtpd -n -l 127.0.0.1:PORT -c aiosmtpd.handlers.Mailbox MAILDIR`.
 * @returns {Promise<{port, maildir, proc, messages, waitForMessage, output, stop}>}
 */
export async function startSmtp({ dir } = {}) {
  const maildir = path.join(dir ?? tmpDir("isto-smtp-"), "Maildir");
  const port = await freePort();
  let output = "";
  const proc = track(
    spawn(
      PYTHON,
      ["-m", "aiosmtpd", "-n", "-l", `127.0.0.1:${port}`, "-c", "aiosmtpd.handlers.Mailbox", maildir],
      { stdio: ["ignore", "pipe", "pipe"] },
    ),
  );
  proc.stdout.on("data", (d) => (output += d));
  proc.stderr.on("data", (d) => (output += d));
  await waitFor(
    async () => {
      if (proc.exitCode !== null) throw new Error(`aiosmtpd exited (${proc.exitCode}): ${output}`);
      return canConnect(port);
    },
    { timeout: 15000, interval: 100, what: `aiosmtpd on 127.0.0.1:${port}` },
  );
  const messages = () => (fs.existsSync(maildir) ? readMaildir(maildir) : []);
  return {
    port,
    maildir,
    proc,
    url: `smtp://127.0.0.1:${port}`,
    output: () => output,
    messages,
    /** Poll until a message satisfying `pred` exists; resolves with it. */
    waitForMessage(pred, { timeout = 30000, what = "an e-mail" } = {}) {
      return waitFor(() => messages().find(pred), { timeout, interval: 300, what });
    },
    stop: () => terminate(proc, 5000),
  };
}

// ---------------------------------------------------------------------------
// isto

function istoEnv({ dataDir, port, smtpPort, env }) {
  const e = { ...process.env };
  for (const k of Object.keys(e)) if (k.startsWith("ISTO_") && k !== "ISTO_BIN") delete e[k];
  Object.assign(e, {
    ISTO_DATA_DIR: dataDir,
    ISTO_MAIL_FROM: "holder@example.test",
    RUST_LOG: "info",
    NO_COLOR: "1",
  });
  if (port) {
    e.ISTO_LISTEN = `127.0.0.1:${port}`;
    e.ISTO_PUBLIC_URL = `http://127.0.0.1:${port}`;
  }
  if (smtpPort) e.ISTO_SMTP_URL = `smtp://127.0.0.1:${smtpPort}`;
  return { ...e, ...(env ?? {}) };
}

/** Does the isto binary exist? */
export function istoAvailable() {
  return fs.existsSync(ISTO_BIN);
}

/**
 * Run `isto ARGS...` to completion with ISTO_DATA_DIR = dataDir.
 * @returns {Promise<{code, signal, stdout, stderr}>}
 */
export function runIsto(args, { dataDir, smtpPort, port, env, timeout = 300000, input } = {}) {
  return new Promise((resolve, reject) => {
    const child = track(
      spawn(ISTO_BIN, args, {
        env: istoEnv({ dataDir, smtpPort, port, env }),
        stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
      }),
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    if (input !== undefined) child.stdin.end(input);
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`isto ${args.join(" ")} timed out after ${timeout} ms\n${stdout}\n${stderr}`));
    }, timeout);
    child.once("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** `isto admin offers import FILE` with the given data dir. */
export function importOffers(file, opts = {}) {
  return runIsto(["admin", "offers", "import", file], opts);
}

/**
 * Start `isto serve` on a free port and wait for GET /healthz = 200.
 * stdout+stderr are captured (in memory and in logFile) so tests can grep them.
 * `nofile`: the limit on open files isto runs with (as `LimitNOFILE` in isto.service;
 * set by `ulimit -n` in a shell that then execs isto, so `proc.pid` is isto's): a number
 * sets the soft and hard limits, `{ soft, hard }` either or both (`ulimit -Sn`/`-Hn`).
 */
export async function startIsto({ smtpPort, dataDir, env, timeout = 60000, nofile, metrics = false } = {}) {
  dataDir ??= tmpDir("isto-data-");
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const metricsUrl = metrics ? `http://127.0.0.1:${await freePort()}` : null;
  const logFile = path.join(path.dirname(dataDir), `${path.basename(dataDir)}.log`);
  const logStream = fs.createWriteStream(logFile);
  let log = "";
  const withMetrics = metricsUrl ? { ISTO_METRICS_LISTEN: metricsUrl.slice("http://".length), ...(env ?? {}) } : env;
  const fullEnv = istoEnv({ dataDir, port, smtpPort, env: withMetrics });
  const ulimit =
    typeof nofile === "object"
      ? [nofile.hard !== undefined && `ulimit -Hn ${Number(nofile.hard)}`, nofile.soft !== undefined && `ulimit -Sn ${Number(nofile.soft)}`]
          .filter(Boolean)
          .join(" && ")
      : nofile && `ulimit -n ${Number(nofile)}`;
  const [cmd, args] = ulimit ? ["/bin/sh", ["-c", `${ulimit} && exec "$0" serve`, ISTO_BIN]] : [ISTO_BIN, ["serve"]];
  const proc = track(spawn(cmd, args, { env: fullEnv, stdio: ["ignore", "pipe", "pipe"] }));
  const onData = (d) => {
    log += d;
    logStream.write(d);
  };
  proc.stdout.on("data", onData);
  proc.stderr.on("data", onData);
  const exited = new Promise((resolve) => proc.once("exit", (code, signal) => resolve({ code, signal })));

  try {
    await waitFor(
      async () => {
        if (proc.exitCode !== null || proc.signalCode !== null) {
          throw Object.assign(new Error(`isto serve exited (${proc.exitCode ?? proc.signalCode})`), {
            fatal: true,
          });
        }
        const res = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(2000) });
        await res.arrayBuffer();
        return res.status === 200;
      },
      { timeout, interval: 150, what: `isto serve /healthz on ${baseUrl}` },
    );
  } catch (e) {
    await terminate(proc, 2000);
    logStream.end();
    throw new Error(`${e.message}\n--- isto log ---\n${log}`);
  }

  return {
    port,
    baseUrl,
    origin: baseUrl,
    mcpUrl: `${baseUrl}/mcp`,
    dataDir,
    logFile,
    env: fullEnv,
    proc,
    exited,
    /** The metrics listener (`/metrics`, `/readyz` with the report); null unless `metrics`. */
    metricsUrl,
    /**
     * Waits until the outbox is empty (needs `metrics`): every queued e-mail was accepted
     * by the SMTP server (a job leaves the outbox only then) or dropped, so no mail queued
     * so far can arrive any more.
     */
    async outboxIdle({ timeout = 30000 } = {}) {
      if (!metricsUrl) throw new Error("outboxIdle needs startIsto({ metrics: true })");
      return waitFor(
        async () => {
          const res = await fetch(`${metricsUrl}/readyz`, { signal: AbortSignal.timeout(2000) });
          const report = await res.json();
          return report?.checks?.outbox?.backlog === 0;
        },
        { timeout, interval: 100, what: "an empty outbox" },
      );
    },
    /** Everything isto wrote to stdout and stderr so far. */
    log: () => log,
    /**
     * The log once it holds every line logged before this call: `isto serve` writes lines
     * below warning level in batches (app::logbuf), in order, so this asks GET /healthz
     * and waits for that request's access line (its x-request-id). A server that does not
     * answer: the log as it is.
     */
    async settledLog({ timeout = 10000 } = {}) {
      let id;
      try {
        const res = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(5000) });
        await res.arrayBuffer();
        id = res.headers.get("x-request-id");
      } catch {
        return log;
      }
      if (!id) return log;
      await waitFor(() => log.includes(id), { timeout, interval: 20, what: `the access line of request ${id} in the log` });
      return log;
    },
    /** Run `isto ARGS` against the same data dir and settings. */
    run: (args, opts = {}) => runIsto(args, { dataDir, port, smtpPort, ...opts }),
    importOffers: (file, opts = {}) => importOffers(file, { dataDir, port, smtpPort, ...opts }),
    async stop() {
      const res = await terminate(proc, 10000);
      await new Promise((r) => logStream.end(r));
      return res;
    },
  };
}

/**
 * Runs one end-to-end test's `body(env)` against a fresh isto and always stops what it
 * started, whatever the body does.
 *
 * Before the body: checks that the binary exists, makes a work dir (`prefix`…) with an
 * empty `data` dir, starts the SMTP server (unless `smtp: false`) and `isto serve` with
 * `isto` as its options (unless `start: false`). `env` holds {work, dataDir, smtp,
 * isto} and:
 *   - `env.start(opts)`: start (another) `isto serve` on the data dir, using the latest
 *     SMTP server unless `opts.smtpPort` says otherwise; becomes `env.isto`;
 *   - `env.startSmtp()`: start (another) SMTP server; becomes `env.smtp`;
 *   - `env.defer(fn)`: run `fn` at the end, before the servers stop (MCP clients, …).
 * Afterwards, in a finally: the deferred functions (newest first, errors ignored), then
 * every isto started, then every SMTP server. The work dir (data, isto logs, Maildir)
 * is removed when the body returned and ISTO_E2E_KEEP is unset; otherwise it is kept and
 * its path reported as a test diagnostic.
 */
export async function withIsto(t, { prefix = "isto-e2e-", smtp = true, start = true, isto = {} } = {}, body) {
  if (!istoAvailable()) {
    throw new Error(`isto binary not found at ${ISTO_BIN}: run \`cargo build\` or set ISTO_BIN`);
  }
  const work = tmpDir(prefix);
  const dataDir = path.join(work, "data");
  fs.mkdirSync(dataDir);
  const istos = [];
  const smtps = [];
  const deferred = [];
  const env = {
    work,
    dataDir,
    smtp: null,
    isto: null,
    async startSmtp() {
      env.smtp = await startSmtp({ dir: work });
      smtps.push(env.smtp);
      return env.smtp;
    },
    async start(opts = {}) {
      env.isto = await startIsto({ smtpPort: env.smtp?.port, dataDir, ...opts });
      istos.push(env.isto);
      return env.isto;
    },
    defer(fn) {
      deferred.push(fn);
    },
  };
  let finished = false;
  try {
    if (smtp) await env.startSmtp();
    if (start) await env.start(isto);
    const res = await body(env);
    finished = true;
    return res;
  } finally {
    for (const fn of deferred.reverse()) {
      try {
        await fn();
      } catch {
        /* a clean-up failure does not hide the test's own result */
      }
    }
    for (const i of istos.reverse()) await i.stop();
    for (const s of smtps.reverse()) await s.stop();
    if (finished && !process.env.ISTO_E2E_KEEP) fs.rmSync(work, { recursive: true, force: true });
    else t.diagnostic(`kept ${work}`);
  }
}

// ---------------------------------------------------------------------------
// MCP client

/**
 * Connect an SDK client (Streamable HTTP) to `${baseUrl}/mcp`.
 * callTool(name, args, {validate}) returns the raw result ({structuredContent, content,
 * isError}); with validate: true the SDK's own checks run too (structuredContent must
 * match the tool's outputSchema once listTools has been called). JSON-RPC errors throw.
 */
export async function connectMcp(url, { name = "isto-e2e", version = "0.0.0" } = {}) {
  const mcpUrl = url.endsWith("/mcp") ? url : `${url.replace(/\/$/, "")}/mcp`;
  const client = new Client({ name, version });
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl));
  await client.connect(transport);
  return {
    client,
    transport,
    listTools: () => client.listTools(),
    async callTool(toolName, args = {}, { validate = false } = {}) {
      if (validate) return client.callTool({ name: toolName, arguments: args });
      return client.request(
        { method: "tools/call", params: { name: toolName, arguments: args } },
        CallToolResultSchema,
      );
    },
    close: () => client.close(),
  };
}

/** All text of a tool result (text contents + structuredContent as JSON). */
export function resultText(result) {
  const parts = [];
  for (const c of result?.content ?? []) if (c.type === "text") parts.push(c.text);
  if (result?.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  return parts.join("\n");
}

// ---------------------------------------------------------------------------
// raw HTTP (node:http lets us set Host/Origin freely)

/**
 * One HTTP request without redirects. `headers` may include Host and Origin.
 * @returns {Promise<{status, headers, body}>}
 */
export function httpRequest(url, { method = "GET", headers = {}, body } = {}) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method,
        headers: { ...(body !== undefined ? { "Content-Length": Buffer.byteLength(body) } : {}), ...headers },
        timeout: 15000,
      },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }),
        );
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`request to ${url} timed out`)));
    req.on("error", reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** An MCP initialize request body (JSON-RPC). */
export function initializeBody(id = 1) {
  return JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "initialize",
    params: {
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "isto-e2e-raw", version: "0.0.0" },
    },
  });
}

// ---------------------------------------------------------------------------
// HTML

const NAMED_ENTITIES = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0" };

/** Decode HTML character references (&amp; &#39; &#x27; &nbsp; ...). */
export function decodeEntities(s) {
  return String(s).replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (m, ent) => {
    if (ent[0] === "#") {
      const cp = ent[1] === "x" || ent[1] === "X" ? parseInt(ent.slice(2), 16) : parseInt(ent.slice(1), 10);
      return Number.isFinite(cp) ? String.fromCodePoint(cp) : m;
    }
    return NAMED_ENTITIES[ent.toLowerCase()] ?? m;
  });
}

/** Visible-ish text of an HTML page: no scripts/styles/tags, entities decoded, spaces collapsed. */
export function htmlText(html) {
  return decodeEntities(
    String(html)
      .replace(/<(script|style)\b[\s\S]*?<\/\1\s*>/gi, " ")
      .replace(/<[^>]*>/g, " "),
  )
    .replace(/\s+/g, " ")
    .trim();
}

/** Attributes of one start tag, e.g. parseAttributes('<input type="hidden" name=a>'). */
export function parseAttributes(tag) {
  const attrs = {};
  const inner = tag.replace(/^<\s*[\w-]+/, "").replace(/\/?>$/, "");
  const re = /([^\s"'<>\/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g;
  let m;
  while ((m = re.exec(inner))) {
    const name = m[1].toLowerCase();
    if (name in attrs) continue;
    attrs[name] = decodeEntities(m[2] ?? m[3] ?? m[4] ?? "");
  }
  return attrs;
}

/**
 * All forms of a page: [{method, action (absolute), attrs, html, hidden: [[name, value]],
 * checkboxes: [{name, value, checked}], inputs: [attrs...], submit: {name, value} | null}].
 */
export function parseForms(html, pageUrl) {
  const forms = [];
  const re = /<form\b[^>]*>([\s\S]*?)<\/form\s*>/gi;
  let m;
  while ((m = re.exec(html))) {
    const openTag = m[0].match(/^<form\b[^>]*>/i)[0];
    const attrs = parseAttributes(openTag);
    const body = m[1];
    const inputs = [...body.matchAll(/<input\b[^>]*>/gi)].map((x) => parseAttributes(x[0]));
    const hidden = inputs
      .filter((a) => (a.type ?? "").toLowerCase() === "hidden" && a.name !== undefined)
      .map((a) => [a.name, a.value ?? ""]);
    const checkboxes = inputs
      .filter((a) => (a.type ?? "").toLowerCase() === "checkbox" && a.name !== undefined)
      .map((a) => ({ name: a.name, value: a.value ?? "on", checked: "checked" in a }));
    let submit = null;
    for (const b of body.matchAll(/<button\b[^>]*>/gi)) {
      const a = parseAttributes(b[0]);
      if ((a.type ?? "submit").toLowerCase() === "submit") {
        submit = a.name !== undefined ? { name: a.name, value: a.value ?? "" } : null;
        break;
      }
    }
    if (!submit) {
      const s = inputs.find((a) => (a.type ?? "").toLowerCase() === "submit" && a.name !== undefined);
      if (s) submit = { name: s.name, value: s.value ?? "" };
    }
    forms.push({
      method: (attrs.method ?? "get").toLowerCase(),
      action: new URL(attrs.action ?? "", pageUrl).href,
      attrs,
      html: m[0],
      inputs,
      hidden,
      checkboxes,
      submit,
    });
  }
  return forms;
}

/**
 * The first `<form method="post">` whose action matches `actionPattern` and that has an
 * input named `withInput` (each when given). With `prefer: true` the conditions only
 * rank the forms: the first POST form is the fallback.
 */
export function findPostForm(html, pageUrl, { actionPattern, withInput, prefer = false } = {}) {
  const posts = parseForms(html, pageUrl).filter((f) => f.method === "post");
  const fits = (f) =>
    (!actionPattern || new RegExp(actionPattern).test(f.action)) &&
    (!withInput || f.inputs.some((i) => i.name === withInput));
  return posts.find(fits) ?? (prefer ? posts[0] : undefined) ?? null;
}

/**
 * A minimal browser: a cookie jar for one host, redirects followed by hand (303, and
 * 301/302 after POST, become GET), Origin/Referer on POST like a real browser.
 */
export class Browser {
  constructor() {
    this.cookies = new Map();
  }

  _storeCookies(headers) {
    const list = typeof headers.getSetCookie === "function" ? headers.getSetCookie() : [];
    for (const c of list) {
      const [pair] = c.split(";");
      const i = pair.indexOf("=");
      if (i > 0) this.cookies.set(pair.slice(0, i).trim(), pair.slice(i + 1).trim());
    }
  }

  _cookieHeader() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }

  /**
   * fetch with cookies and manual redirects.
   * @returns {Promise<{status, url, body, headers, history: [{status, url}]}>}
   */
  async request(url, { method = "GET", headers = {}, body, maxRedirects = 10 } = {}) {
    const history = [];
    let current = new URL(url).href;
    for (let i = 0; ; i++) {
      const h = { ...headers };
      if (this.cookies.size) h.Cookie = this._cookieHeader();
      else delete h.Cookie;
      const res = await fetch(current, { method, headers: h, body, redirect: "manual" });
      this._storeCookies(res.headers);
      const loc = res.headers.get("location");
      if ([301, 302, 303, 307, 308].includes(res.status) && loc && i < maxRedirects) {
        await res.arrayBuffer();
        history.push({ status: res.status, url: current });
        current = new URL(loc, current).href;
        if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === "POST")) {
          method = "GET";
          body = undefined;
          headers = { ...headers };
          delete headers["Content-Type"];
          delete headers.Origin;
        }
        continue;
      }
      return { status: res.status, url: current, body: await res.text(), headers: res.headers, history };
    }
  }

  get(url, opts = {}) {
    return this.request(url, { ...opts, method: "GET" });
  }

  /**
   * Submit a POST form found in `html` (page at `pageUrl`): its hidden fields, every
   * checkbox ticked, the submit button's name/value, then `fields` (which override).
   * @returns {Promise<{status, url, body, headers, history, form}>}
   */
  async submitForm(pageUrl, html, fields = {}, { actionPattern, withInput, prefer = false, checkAll = true } = {}) {
    const form = findPostForm(html, pageUrl, { actionPattern, withInput, prefer });
    if (!form) throw new Error(`no <form method="post"> on ${pageUrl}\n${html.slice(0, 2000)}`);
    return { ...(await this.postForm(form, pageUrl, fields, { checkAll })), form };
  }

  /** POST a parsed form (see parseForms) with extra `fields`. */
  async postForm(form, pageUrl, fields = {}, { checkAll = true } = {}) {
    const params = new URLSearchParams();
    const overridden = new Set(Object.keys(fields));
    for (const [k, v] of form.hidden) if (!overridden.has(k)) params.append(k, v);
    for (const cb of form.checkboxes) {
      if ((checkAll || cb.checked) && !overridden.has(cb.name)) params.append(cb.name, cb.value);
    }
    if (form.submit && !overridden.has(form.submit.name)) params.append(form.submit.name, form.submit.value);
    for (const [k, v] of Object.entries(fields)) params.append(k, String(v));
    const origin = new URL(pageUrl).origin;
    return this.request(form.action, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: origin, Referer: pageUrl },
      body: params.toString(),
    });
  }
}

/** URLs in a text (or HTML, entities decoded), in order. */
export function extractUrls(text) {
  return [...decodeEntities(String(text ?? "")).matchAll(/https?:\/\/[^\s<>"'()\[\]]+/g)].map((m) =>
    m[0].replace(/[.,;:!?]+$/, ""),
  );
}

/** A random lower-case token, for unique e-mail addresses. */
export function randomToken(n = 10) {
  const abc = "abcdefghijklmnopqrstuvwxyz0123456789";
  let s = "";
  for (let i = 0; i < n; i++) s += abc[Math.floor(Math.random() * abc.length)];
  return s;
}
