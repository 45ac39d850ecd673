// Quotas on unauthenticated writes and the purge, against the real
// binary with a config file of low quotas and a 3-second draft lifetime: a draft flood
// on /mcp and a registration flood on /oauth/register stop at their quota with an error
// that names the rule and when to retry; once the drafts lapsed, `isto admin purge`
// (through the running server's admin socket) removes exactly what `--dry-run` counted,
// and their intentCodes are gone.
//
// Loopback only; every loop is bounded in count (at most FLOOD calls) and every wait in
// time. The sweeper inside `isto serve` runs the same purge once at start and then every
// 60 s; the test finishes well within that minute, so the admin command is the one that
// removes the drafts.
//
// Needs: the isto binary (ISTO_BIN or target/debug/isto). No SMTP server.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import test from "node:test";

import { connectMcp, httpRequest, resultText, waitFor, withIsto } from "./lib/harness.mjs";

const DRAFTS = 5;
const REGISTRATIONS = 3;
const FLOOD = 12;
const TTL_SECS = 3;

function writeConfig(work) {
  const file = path.join(work, "isto.toml");
  fs.writeFileSync(
    file,
    [
      "[intents]",
      `draft_ttl_secs = ${TTL_SECS}`,
      "[quotas]",
      `drafts_per_client_per_hour = ${DRAFTS}`,
      `registrations_per_client_per_hour = ${REGISTRATIONS}`,
      "",
    ].join("\n"),
  );
  return file;
}

async function purge(isto, config, ...flags) {
  const r = await isto.run(["admin", "purge", "--json", ...flags], { env: { ISTO_CONFIG: config }, timeout: 30000 });
  assert.equal(r.code, 0, `isto admin purge ${flags.join(" ")}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim());
}

test("a draft flood and a registration flood stop at the quota; the purge removes the lapsed drafts", async (t) => {
  await withIsto(t, { prefix: "isto-e2e-quota-", smtp: false, start: false }, async (env) => {
    const config = writeConfig(env.work);
    const isto = await env.start({ env: { ISTO_CONFIG: config } });
    const check = await isto.run(["admin", "check-config", "--json"], { env: { ISTO_CONFIG: config } });
    assert.equal(JSON.parse(check.stdout).quotas.drafts_per_client_per_hour, DRAFTS);

    // Draft flood: DRAFTS succeed, then every call is refused with the rule.
    const mcp = await connectMcp(isto.mcpUrl);
    env.defer(() => mcp.close());
    const codes = [];
    const refusals = [];
    for (let i = 0; i < FLOOD; i++) {
      const r = await mcp.callTool("intent_publish_intent", {
        statement: `Škoda Octavia combi ${i}`,
        criteria: { category: "vehicles" },
        area: "SK",
      });
      if (r.isError) refusals.push(resultText(r));
      else codes.push(r.structuredContent.intentCode);
    }
    assert.equal(codes.length, DRAFTS, refusals.join("\n"));
    assert.equal(refusals.length, FLOOD - DRAFTS);
    for (const text of refusals) {
      assert.match(text, /^too many drafts from this address in the last hour/);
      assert.match(text, new RegExp(`quotas\\.drafts_per_client_per_hour = ${DRAFTS}`));
      assert.match(text, /try again after \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(in \d+ s\)/);
    }

    // Registration flood: REGISTRATIONS are created, then 429 with Retry-After.
    const statuses = [];
    let refused;
    for (let i = 0; i < FLOOD; i++) {
      const r = await httpRequest(`${isto.baseUrl}/oauth/register`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ redirect_uris: ["http://127.0.0.1/cb"], token_endpoint_auth_method: "none" }),
      });
      statuses.push(r.status);
      if (r.status === 429) refused ??= r;
    }
    assert.deepEqual(
      statuses,
      [...Array(REGISTRATIONS).fill(201), ...Array(FLOOD - REGISTRATIONS).fill(429)],
      "registrations stop at the quota",
    );
    const retry = Number(refused.headers["retry-after"]);
    assert.ok(retry >= 1 && retry <= 3600, `Retry-After ${refused.headers["retry-after"]}`);
    const err = JSON.parse(refused.body);
    assert.equal(err.error, "temporarily_unavailable");
    assert.match(err.error_description, /^too many client registrations from this address in the last hour/);
    assert.match(err.error_description, /quotas\.registrations_per_client_per_hour = 3/);

    // The drafts lapse after TTL_SECS; the dry run then counts them (and removes nothing).
    let dry;
    await waitFor(
      async () => {
        dry = await purge(isto, config, "--dry-run");
        return dry.drafts === DRAFTS;
      },
      { timeout: 30000, interval: 500, what: "the drafts to lapse" },
    );
    assert.equal(dry.draftTokens, 2 * DRAFTS, "a code and a consent link per draft");
    const still = await mcp.callTool("intent_get_intent", { intentCode: codes[0] });
    assert.equal(still.isError ?? false, false, "a dry run removes nothing");
    assert.equal(still.structuredContent.intent.status, "expired");

    const real = await purge(isto, config);
    assert.deepEqual(real, dry, "the purge removes exactly what the dry run counted");
    assert.equal((await purge(isto, config, "--dry-run")).drafts, 0);
    for (const code of codes) {
      const r = await mcp.callTool("intent_get_intent", { intentCode: code });
      assert.equal(r.isError, true);
      assert.match(resultText(r), /not_found/);
    }
    // The human report names the kinds.
    const text = await isto.run(["admin", "purge", "--dry-run"], { env: { ISTO_CONFIG: config } });
    assert.match(text.stdout, /would remove \(dry run, nothing removed\):/);
    assert.match(text.stdout, /lapsed drafts/);
  });
});
