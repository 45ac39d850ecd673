// Issue 11 point 4: Prometheus metrics on their own listener (`metrics_listen`), scraped
// during and after the consent-link flow (import → publish → consent → confirm → match
// → withdraw): the named series are there and move, a client cannot add label values
// (an unknown tool, a random path), a provoked rate limit is counted, and no scrape
// holds the statement, the e-mail address, the intentCode, any token the flow saw or
// the hidden limit. `isto admin stats --json` through the running server, likewise.
//
// Needs: the isto binary (ISTO_BIN or target/debug/isto), python3 with aiosmtpd.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import test from "node:test";

import {
  connectMcp,
  extractUrls,
  freePort,
  httpRequest,
  randomToken,
  waitFor,
  withIsto,
} from "./lib/harness.mjs";
import { consentAndConfirm, writeJsonl } from "./lib/seller.mjs";

const STATEMENT = "Hledám Škoda Octavia kombi, nejlépe diesel (metriky)";
const HIDDEN_LIMIT = 250000;
const LIMIT_RE = /250[\s\u00a0\u202f.,']?000/;

// A small OAuth burst so that the rate limit is reached in a few requests.
const CONFIG = `
[limits]
oauth_requests_per_minute = 60
oauth_burst = 3
`;

function octavia(ref, amount) {
  return {
    ref,
    title: `Škoda Octavia Combi 2.0 TDI (${ref})`,
    description: "Testovací nabídka pro e2e test metrik.",
    category: "vehicles",
    attributes: { make: "Škoda", model: "Octavia", year: 2016, fuel: "diesel" },
    price: { amount, currency: "CZK" },
    area: { country: "CZ", regions: ["CZ-64"], place: "Brno" },
    seller: { name: "metrics dealer", url: "https://dealer.example/" },
    url: `https://dealer.example/${ref}`,
  };
}

/**
 * The samples of an OpenMetrics text: [{name, labels, value}] (comments left out), and
 * the metric types declared by `# TYPE` lines.
 */
function parse(text) {
  const samples = [];
  const types = new Map();
  for (const line of text.split("\n")) {
    const type = line.match(/^# TYPE (\S+) (\S+)$/);
    if (type) types.set(type[1], type[2]);
    if (!line || line.startsWith("#")) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/);
    assert.ok(m, `not a sample line: ${line}`);
    const labels = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return { samples, types };
}

/** The sum of the samples named `name` whose labels include `labels`. */
function sum(scrape, name, labels = {}) {
  return scrape.samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);
}

test("/metrics during the consent-link flow, bounded labels, no personal data", { timeout: 5 * 60 * 1000 }, (t) =>
  withIsto(t, { prefix: "isto-metrics-", start: false }, async (env) => {
    const metricsPort = await freePort();
    const config = path.join(env.work, "isto.toml");
    fs.writeFileSync(config, CONFIG);
    const isto = await env.start({ env: { ISTO_CONFIG: config, ISTO_METRICS_LISTEN: `127.0.0.1:${metricsPort}` } });
    const texts = [];
    const scrape = async () => {
      const res = await httpRequest(`http://127.0.0.1:${metricsPort}/metrics`);
      assert.equal(res.status, 200, res.body);
      assert.match(res.headers["content-type"], /^application\/openmetrics-text/);
      assert.ok(res.body.endsWith("# EOF\n"), "the exposition does not end in # EOF");
      texts.push(res.body);
      return parse(res.body);
    };
    const secrets = { statement: STATEMENT, "hidden limit": String(HIDDEN_LIMIT) };
    let mcp = null;
    env.defer(() => mcp?.close());

    const before = await scrape();
    // Every series with a fixed label set is there from the start (the request and tool
    // series appear with their first request: checked after the flow).
    for (const [name, type] of [
      ["isto_rate_limited", "counter"],
      ["isto_quota_refusals", "counter"],
      ["isto_offers_imported", "counter"],
      ["isto_deliveries", "counter"],
      ["isto_intents", "gauge"],
      ["isto_outbox_depth", "gauge"],
      ["isto_outbox_oldest_age_seconds", "gauge"],
    ]) {
      assert.equal(before.types.get(name), type, `# TYPE ${name} ${type} missing`);
    }
    assert.equal(sum(before, "isto_intents", { status: "active" }), 0);

    // The public listener does not serve the metrics.
    assert.equal((await httpRequest(`${isto.baseUrl}/metrics`)).status, 404);

    // Import: three offers, two under the hidden limit.
    const file = writeJsonl(env.work, "offers.jsonl", [octavia("m-1", 199000), octavia("m-2", 230000), octavia("m-3", 390000)]);
    const imported = await isto.importOffers(file);
    assert.equal(imported.code, 0, imported.stdout + imported.stderr);
    const afterImport = await scrape();
    assert.equal(sum(afterImport, "isto_offers_imported_total", { result: "created" }), 3);

    // Publish → consent → confirm.
    mcp = await connectMcp(isto.mcpUrl);
    const published = await mcp.callTool("intent_publish_intent", {
      statement: STATEMENT,
      criteria: { category: "vehicles", make: "Škoda", model: "Octavia" },
      area: "Jihomoravský kraj",
      budget: { max: 400000, currency: "CZK" },
      hiddenLimit: HIDDEN_LIMIT,
    });
    assert.ok(!published.isError, JSON.stringify(published));
    const { intentCode, consentUrl } = published.structuredContent;
    secrets.intentCode = intentCode;
    secrets["consent token"] = new URL(consentUrl).pathname.split("/").filter(Boolean).pop();
    if (mcp.transport.sessionId) secrets["MCP session id"] = mcp.transport.sessionId;
    const during = await scrape();
    assert.equal(sum(during, "isto_mcp_tool_calls_total", { tool: "intent_publish_intent", outcome: "ok" }), 1);

    const email = `metrics-${randomToken()}@buyer.example`;
    secrets["e-mail"] = email;
    const { confirmMail } = await consentAndConfirm(env.smtp, consentUrl, email);
    for (const u of extractUrls(`${confirmMail.text ?? ""}\n${confirmMail.html ?? ""}`)) {
      const last = new URL(u).pathname.split("/").filter(Boolean).pop();
      if (last && last.length >= 16) secrets[`token of ${new URL(u).pathname.split("/")[1]} link`] = last;
    }
    const get = async () => (await mcp.callTool("intent_get_intent", { intentCode })).structuredContent?.intent;
    await waitFor(async () => (await get())?.status === "active", { timeout: 15000, what: "the intent active" });
    const active = await scrape();
    assert.equal(sum(active, "isto_intents", { status: "active" }), 1, "the active gauge did not move");
    assert.ok(sum(active, "isto_deliveries_total") >= 2, "the two matching offers were not counted as deliveries");
    assert.ok(sum(active, "isto_http_requests_total", { endpoint: "/consent/{token}", method: "POST" }) >= 1);
    assert.ok(sum(active, "isto_http_requests_total", { endpoint: "/confirm/{token}", method: "GET", status: "200" }) >= 1);

    // Match: both offers under the limit are listed.
    const matches = (await mcp.callTool("intent_list_matches", { intentCode, limit: 10 })).structuredContent.matches;
    assert.equal(matches.length, 2, JSON.stringify(matches));

    // A client cannot make label values: an unknown tool, a random path.
    const junkTool = `no_such_tool_${randomToken(12)}`;
    const junkPath = `/no-such-page-${randomToken(12)}`;
    await assert.rejects(mcp.callTool(junkTool, {}));
    assert.equal((await httpRequest(`${isto.baseUrl}${junkPath}`)).status, 404);
    secrets["unknown tool name"] = junkTool;
    secrets["random path"] = junkPath.slice(1);

    // A bounded burst reaches the OAuth rate limit (burst 3) from one client address.
    let limited = 0;
    for (let i = 0; i < 20 && limited === 0; i++) {
      const r = await httpRequest(`${isto.baseUrl}/.well-known/oauth-protected-resource`, {
        headers: { "X-Forwarded-For": "192.0.2.77" },
      });
      if (r.status === 429) limited++;
    }
    assert.equal(limited, 1, "the OAuth burst never reached 429");

    // Withdraw.
    const w = await mcp.callTool("intent_withdraw_intent", { intentCode });
    assert.ok(!w.isError, JSON.stringify(w));
    const after = await scrape();
    assert.equal(sum(after, "isto_intents", { status: "active" }), 0, "the active gauge did not fall at the withdrawal");
    assert.equal(sum(after, "isto_mcp_tool_calls_total", { tool: "intent_withdraw_intent", outcome: "ok" }), 1);
    assert.ok(sum(after, "isto_mcp_tool_calls_total", { tool: "intent_get_intent", outcome: "ok" }) >= 1);
    assert.equal(sum(after, "isto_mcp_tool_calls_total", { tool: "other", outcome: "unknown_tool" }), 1);
    assert.ok(sum(after, "isto_http_requests_total", { endpoint: "unmatched", status: "404" }) >= 2);
    assert.equal(sum(after, "isto_rate_limited_total", { scope: "oauth" }), 1);
    assert.ok(sum(after, "isto_http_requests_total", { endpoint: "/mcp", method: "POST", status: "200" }) > sum(before, "isto_http_requests_total", { endpoint: "/mcp" }));
    assert.ok(sum(after, "isto_http_request_duration_seconds_count", { endpoint: "/mcp" }) >= 5);
    assert.ok(after.samples.some((s) => s.name === "isto_outbox_depth"), "no outbox depth sample");
    assert.ok(after.samples.some((s) => s.name === "isto_outbox_oldest_age_seconds"), "no outbox age sample");
    for (const [name, type] of [
      ["isto_http_requests", "counter"],
      ["isto_http_request_duration_seconds", "histogram"],
      ["isto_mcp_tool_calls", "counter"],
    ]) {
      assert.equal(after.types.get(name), type, `# TYPE ${name} ${type} missing`);
    }
    for (const status of ["awaiting_consent", "awaiting_email_confirmation", "active", "expired", "withdrawn"]) {
      assert.ok(after.samples.some((s) => s.name === "isto_intents" && s.labels.status === status), `no isto_intents{status="${status}"}`);
    }
    assert.ok(after.samples.some((s) => s.name === "isto_quota_refusals_total" && s.labels.rule === "drafts_per_client"));
    const tools = new Set(after.samples.filter((s) => s.name === "isto_mcp_tool_calls_total").map((s) => s.labels.tool));
    for (const tool of tools) assert.match(tool, /^(intent_[a-z_]+|other)$/, `tool label ${tool}`);

    // admin stats through the running server: counts only.
    const stats = await isto.run(["admin", "stats", "--json"]);
    assert.equal(stats.code, 0, stats.stdout + stats.stderr);
    const s = JSON.parse(stats.stdout);
    assert.equal(s.intents.total, 1);
    assert.deepEqual(s.intents.byStatus, { withdrawn: 1 });
    assert.deepEqual(s.intents.byCategory, { vehicles: { withdrawn: 1 } });
    assert.equal(s.offers.total, 3);
    assert.equal(s.deliveries, 2);
    texts.push(stats.stdout);

    // No scrape (nor the stats) holds anything personal or secret.
    t.diagnostic(`${texts.length} scrapes checked for ${Object.keys(secrets).length} secrets`);
    for (const text of texts) {
      for (const [what, secret] of Object.entries(secrets)) {
        assert.ok(!text.includes(secret), `a scrape contains the ${what}`);
      }
      assert.doesNotMatch(text, LIMIT_RE, "a scrape contains the hidden limit");
      assert.ok(!text.includes(email.split("@")[1]), "a scrape contains the e-mail domain");
    }
  }),
);
