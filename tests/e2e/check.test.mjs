// `isto check URL`: the MCP binding's automated check.
//
// * against isto itself, both MCP revisions: exit 0, every check passes (rate.limit
//   passes too: isto answers 429 with Retry-After within the check's bounded burst),
//   the JSON report has the documented shape, and the check left no draft behind
//   (`isto admin stats` before and after: no awaiting_consent intent);
// * against small holders on the TypeScript SDK v1 server (lib/broken_holder.mjs) with
//   isto's own tool schemas: the baseline passes (exit 0); each deliberate break makes
//   the check exit 1 with exactly the named check failing;
// * a URL where nothing answers: exit 2 with a clear message; a non-http URL: exit 2;
// * in every report, each check — passed, failed, skipped or informational — cites a
//   specification (seed §n, PROTOCOL.md §n, RFC n, or an MCP page with its revision) and
//   no work item.
// `isto admin registry-entry --check-result FILE` carries the report and the same
// name, countries, languages and endpoints as GET /.well-known/isto-intents.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import test from "node:test";

import { E2E_DIR, freePort, runIsto, terminate, waitFor, withIsto } from "./lib/harness.mjs";

const BROKEN = path.join(E2E_DIR, "lib", "broken_holder.mjs");

/** Runs `isto check ARGS --json` and parses its report. */
async function check(url, extra = []) {
  const res = await runIsto(["check", url, "--json", ...extra], { timeout: 120000 });
  let report;
  try {
    report = JSON.parse(res.stdout);
  } catch {
    report = null;
  }
  return { ...res, report };
}

const failing = (report) => report.checks.filter((c) => c.status === "fail").map((c) => c.id);

/** A citation of a specification: the seed's or PROTOCOL.md's §, an RFC, an MCP spec page of a revision. */
const CITATION = /(^|[\s,(])(seed §\d|PROTOCOL\.md §\d|RFC \d+|MCP (2025-11-25|2026-07-28) [a-z/]+)/;
/** A work item: an issue, a ticket, a #number. */
const WORK_ITEM = /\b(issues?|tickets?|todo)\b|#\d/i;

/** Every check of `report` cites a specification and no work item. */
function assertCitations(report) {
  assert.ok(report.checks.length > 0, "no checks");
  for (const c of report.checks) {
    assert.match(c.ref, CITATION, `${c.id} (${c.status}) cites no specification: ${c.ref}`);
    assert.doesNotMatch(c.ref, WORK_ITEM, `${c.id} (${c.status}) cites a work item: ${c.ref}`);
  }
}

/** Starts lib/broken_holder.mjs with `brk` and isto's tools dump; returns {url, stop}. */
async function startBroken(brk, toolsFile, extra = []) {
  const port = await freePort();
  const argv = [BROKEN, `--port=${port}`, `--tools=${toolsFile}`, `--break=${brk}`, ...extra];
  const child = spawn(process.execPath, argv, {
    cwd: E2E_DIR,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  await waitFor(() => out.includes("listening"), { timeout: 15000, what: `broken holder ${brk}: ${out}` });
  return { url: `http://127.0.0.1:${port}/mcp`, stop: () => terminate(child, 3000) };
}

/** isto's tools/list (2025-11-25, one request each for initialize and tools/list). */
async function istoTools(mcpUrl) {
  const post = (body, headers = {}) =>
    fetch(mcpUrl, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", ...headers },
      body: JSON.stringify(body),
    });
  const init = await post({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "0" } },
  });
  const sid = init.headers.get("mcp-session-id");
  await init.json();
  const h = { "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" };
  await (await post({ jsonrpc: "2.0", method: "notifications/initialized" }, h)).arrayBuffer();
  const list = await (await post({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }, h)).json();
  return list.result.tools;
}

test("isto check passes against isto in both revisions and cleans up; registry-entry carries the report", async (t) => {
  await withIsto(t, { prefix: "isto-e2e-check-", smtp: false }, async (env) => {
    const doc = await (await fetch(`${env.isto.baseUrl}/.well-known/isto-intents`)).json();
    const { report, code, stderr } = await check(env.isto.mcpUrl);
    assert.ok(report, `no JSON report: ${stderr}`);
    t.diagnostic(JSON.stringify(report.checks.map((c) => `${c.status} ${c.revision ?? "-"} ${c.id}`)));
    assert.deepEqual(failing(report), [], JSON.stringify(report.checks.filter((c) => c.status === "fail"), null, 1));
    assert.equal(code, 0);
    assert.equal(report.ok, true);
    assert.deepEqual(report.revisions, ["2025-11-25", "2026-07-28"]);
    for (const c of report.checks) {
      assert.deepEqual(Object.keys(c).sort(), ["detail", "id", "ref", "revision", "status"]);
      assert.ok(["pass", "fail", "skip", "info"].includes(c.status));
    }
    assertCitations(report);
    const ids = (rev) => report.checks.filter((c) => c.revision === rev && c.status === "pass").map((c) => c.id);
    for (const rev of ["2025-11-25", "2026-07-28"]) {
      for (const id of [
        "tools.present",
        "tools.disclaimer",
        "publish.no_contact_field",
        "publish.unknown_refused",
        "publish.intent_code",
        "publish.consent_url",
        "get.by_code",
        "list_matches.by_code",
        "codes.wrong_like_unknown",
        "withdraw.immediate",
        "input.error_names_field",
        "demand.draft_not_counted",
        "demand.below_k_withheld",
        "results.no_secrets",
        "transport.origin",
        "transport.accept_both",
        "transport.accept_json",
      ]) {
        assert.ok(ids(rev).includes(id), `${rev} ${id} did not pass`);
      }
    }
    assert.ok(ids("2026-07-28").includes("transport.server_discover"));
    assert.ok(ids("2025-11-25").includes("transport.initialize"));
    const holderWide = report.checks.filter((c) => c.revision === null && c.status === "pass").map((c) => c.id);
    for (const id of ["oauth.challenge", "oauth.resource_metadata", "oauth.as_metadata", "rate.limit"]) {
      assert.ok(holderWide.includes(id), `${id} did not pass`);
    }
    // (The check ended with its rate-limit burst: this address is limited for a moment,
    // so nothing below talks HTTP to isto; the metadata document was read before.)

    // Every draft the check made is withdrawn.
    const stats = JSON.parse((await env.isto.run(["admin", "stats", "--json"])).stdout);
    t.diagnostic(`stats after the check: ${JSON.stringify(stats.intents ?? stats)}`);
    const byStatus = stats.intents?.byStatus;
    assert.ok(byStatus && typeof byStatus === "object", `stats have intents.byStatus: ${JSON.stringify(stats)}`);
    assert.ok((byStatus.withdrawn ?? 0) >= 1, `the check's drafts are counted as withdrawn: ${JSON.stringify(byStatus)}`);
    assert.equal(byStatus.awaiting_consent ?? 0, 0, `drafts left behind: ${JSON.stringify(byStatus)}`);

    // The registry entry with the report, the same data as the metadata document.
    const file = path.join(env.work, "check.json");
    fs.writeFileSync(file, JSON.stringify(report));
    const entryRun = await env.isto.run(["admin", "registry-entry", "--check-result", file, "--json"]);
    assert.equal(entryRun.code, 0, entryRun.stderr);
    const entry = JSON.parse(entryRun.stdout);
    for (const k of ["name", "countries", "languages", "endpoints"]) assert.deepEqual(entry[k], doc[k], k);
    assert.deepEqual(entry.categories, doc.categories.map((c) => c.key));
    assert.deepEqual(entry.protocolRevisions, ["2025-11-25", "2026-07-28"]);
    assert.equal(entry.check.ok, true);
    const bad = path.join(env.work, "bad.json");
    fs.writeFileSync(bad, "{}");
    const refused = await env.isto.run(["admin", "registry-entry", "--check-result", bad]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /not an `isto check --json` report/);
  });
});

test("isto check fails, naming the check, against deliberately broken holders", async (t) => {
  await withIsto(t, { prefix: "isto-e2e-check-broken-", smtp: false }, async (env) => {
    const toolsFile = path.join(env.work, "tools.json");
    fs.writeFileSync(toolsFile, JSON.stringify(await istoTools(env.isto.mcpUrl)));
    const cases = [
      ["none", []],
      ["echo-limit", ["results.no_secrets"]],
      ["email", ["publish.no_contact_field"]],
      ["short-code", ["publish.intent_code"]],
      ["ignore-withdraw", ["withdraw.immediate"]],
      ["no-disclaimer", ["tools.disclaimer"]],
    ];
    for (const [brk, expected] of cases) {
      const holder = await startBroken(brk, toolsFile);
      try {
        const { report, code, stderr } = await check(holder.url, ["--revision", "2025-11-25"]);
        assert.ok(report, `${brk}: no JSON report: ${stderr}`);
        assertCitations(report);
        assert.deepEqual(failing(report), expected, `${brk}: ${JSON.stringify(report.checks, null, 1)}`);
        assert.equal(code, expected.length === 0 ? 0 : 1, brk);
        assert.equal(report.ok, expected.length === 0);
        if (brk === "none") {
          // The table form: one line per check and the summary.
          const table = await runIsto(["check", holder.url, "--revision", "2025-11-25"], { timeout: 120000 });
          assert.equal(table.code, 0, table.stdout + table.stderr);
          assert.match(table.stdout, /^pass\s+2025-11-25\s+publish\.intent_code\s/m);
          assert.match(table.stdout, /^OK: \d+ passed, 0 failed/m);
        }
        for (const id of expected) {
          const c = report.checks.find((x) => x.id === id && x.status === "fail");
          t.diagnostic(`${brk}: ${id}: ${c.detail}`);
        }
      } finally {
        await holder.stop();
      }
    }
  });
});

test("isto check fetches only the checked origin, and a holder's quota makes the report incomplete, not failed", async (t) => {
  await withIsto(t, { prefix: "isto-e2e-check-origin-", smtp: false }, async (env) => {
    const toolsFile = path.join(env.work, "tools.json");
    fs.writeFileSync(toolsFile, JSON.stringify(await istoTools(env.isto.mcpUrl)));
    // A trap on another origin that the holder's metadata names as its buyer endpoint.
    const http = await import("node:http");
    const hits = [];
    const trap = http.createServer((req, res) => {
      hits.push(`${req.method} ${req.url}`);
      res.writeHead(401, { "WWW-Authenticate": 'Bearer resource_metadata="http://127.0.0.1:1/x"' }).end();
    });
    await new Promise((r) => trap.listen(0, "127.0.0.1", r));
    const trapUrl = `http://127.0.0.1:${trap.address().port}/internal/admin`;
    const foreign = await startBroken("foreign-endpoint", toolsFile, [`--trap=${trapUrl}`]);
    try {
      const { report, code, stderr } = await check(foreign.url, ["--revision", "2025-11-25"]);
      assert.ok(report, stderr);
      assert.deepEqual(failing(report), [], JSON.stringify(report.checks, null, 1));
      assert.equal(code, 0);
      assertCitations(report);
      const oauth = report.checks.find((c) => c.id === "oauth.challenge");
      assert.equal(oauth.status, "skip", JSON.stringify(oauth));
      assert.match(oauth.detail, /not on the checked URL's origin: not fetched/);
      assert.deepEqual(hits, [], "the check sent nothing to the other origin");
    } finally {
      await foreign.stop();
      trap.close();
    }
    const quota = await startBroken("quota", toolsFile);
    try {
      const { report, code, stderr } = await check(quota.url, ["--revision", "2025-11-25"]);
      assert.ok(report, stderr);
      assert.equal(code, 2, "an incomplete report exits 2");
      assertCitations(report);
      assert.equal(report.ok, true);
      assert.equal(report.complete, false);
      assert.deepEqual(failing(report), []);
      const skipped = report.checks.filter((c) => c.status === "skip").map((c) => c.id);
      for (const id of ["publish.intent_code", "get.by_code", "withdraw.immediate", "results.no_secrets"]) {
        assert.ok(skipped.includes(id), `${id} skipped: ${skipped}`);
      }
      const pub = report.checks.find((c) => c.id === "publish.intent_code");
      assert.match(pub.detail, /try again after 2099-01-01T00:00:00Z/, "the holder's whole retry time is shown");
    } finally {
      await quota.stop();
    }
    // A report of another holder is not taken into this holder's registry entry.
    const other = path.join(env.work, "other.json");
    fs.writeFileSync(
      other,
      JSON.stringify({ ok: true, holder: "https://other.example/mcp", checks: [{ id: "x", status: "pass" }] }),
    );
    const refused = await env.isto.run(["admin", "registry-entry", "--check-result", other]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /not of this holder/);
  });
});

test("isto check exits 2 when it cannot run", async () => {
  const port = await freePort();
  const dead = await runIsto(["check", `http://127.0.0.1:${port}/mcp`], { timeout: 60000 });
  assert.equal(dead.code, 2, dead.stdout + dead.stderr);
  assert.match(dead.stderr, /could not run/);
  const scheme = await runIsto(["check", "ftp://127.0.0.1/mcp", "--json"], { timeout: 60000 });
  assert.equal(scheme.code, 2);
  assert.equal(JSON.parse(scheme.stdout).ok, false);
  // Not MCP: a plain HTTP server answering 404.
  const http = await import("node:http");
  const srv = http.createServer((req, res) => res.writeHead(404).end("no"));
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  try {
    const notMcp = await runIsto(["check", `http://127.0.0.1:${srv.address().port}/mcp`], { timeout: 60000 });
    assert.equal(notMcp.code, 2, notMcp.stdout + notMcp.stderr);
    assert.match(notMcp.stderr, /could not be checked as an MCP server/);
  } finally {
    srv.close();
  }
});
