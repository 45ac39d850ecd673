// Consent by URL-mode elicitation on /mcp (PROTOCOL.md §4 item 1) with
// real SDK clients that declare `elicitation.url` and answer the consent page's
// `elicitation/create`:
//
// * TS SDK v1 (`@modelcontextprotocol/sdk`, 2025-11-25, a session): the server sends
//   `elicitation/create {mode: "url"}` during the publish call. accept → the ordinary
//   result, the draft stays, the URL received is the result's consentUrl on the holder's
//   host; decline → the intent is withdrawn; cancel → still a draft; no answer within
//   `[limits] elicitation_wait_secs` (2 s here) → the ordinary result, still a draft.
// * TS SDK v2 (`@modelcontextprotocol/client`, 2026-07-28, stateless): the first answer
//   is an `InputRequiredResult` with the consent page's `elicitation/create` and a
//   `requestState`; the SDK's driver answers through the registered handler and retries.
//   The same three answers; then by hand (`allowInputRequired`): the same requestState
//   sent twice makes no second draft (`isto admin stats`), a forged, altered or foreign
//   requestState is refused naming `requestState`; a requestState on another tool is
//   refused, and a retry with `inputResponses` but no requestState is an error naming the
//   rule that makes no draft (MCP 2026-07-28 multi round-trip requests; the state's short
//   lifetime is tested with a manual clock in tests/it/mrtr.rs).
// * Clients without the capability (v1 and v2): the ordinary result, as before.
//
// Neither the URL nor the message carries the intentCode.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import test from "node:test";

import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";

import { withIsto } from "./lib/harness.mjs";
import { stepper } from "./lib/steps.mjs";

const V2 = "2026-07-28";
const NODE_MAJOR = Number(process.versions.node.split(".")[0]);
const skipV2 = NODE_MAJOR < 20 && `@modelcontextprotocol/client needs Node >= 20; this is Node ${process.versions.node}`;

const CONFIG = `[limits]\nelicitation_wait_secs = 2\n`;

let n = 0;
/** Distinct publish arguments for each call (a requestState is bound to its call's arguments). */
function publishArgs() {
  n += 1;
  return {
    statement: `Hledám Škoda Octavia kombi ${n}, nejlépe diesel`,
    criteria: { category: "vehicles", make: "Škoda", model: "Octavia" },
    area: "CZ-64",
    budget: { max: 400000, currency: "CZK" },
  };
}

/**
 * An elicitation handler answering `answer` ("accept", "decline", "cancel", or "hang":
 * never, until `release()`), recording every request's params.
 */
function answering(answer) {
  const seen = [];
  let release;
  const hung = new Promise((r) => (release = r));
  const handler = async (request) => {
    seen.push(request.params);
    if (answer === "hang") {
      await hung;
      return { action: "cancel" };
    }
    return { action: answer };
  };
  return { seen, handler, release: () => release() };
}

async function connectV1(url, { elicit } = {}) {
  const client = new ClientV1(
    { name: "isto-e2e-elicit-v1", version: "0.0.0" },
    elicit ? { capabilities: { elicitation: { url: {} } } } : {},
  );
  if (elicit) client.setRequestHandler(ElicitRequestSchema, elicit);
  await client.connect(new TransportV1(new URL(url)));
  return client;
}

async function connectV2(url, { elicit } = {}) {
  const client = new ClientV2(
    { name: "isto-e2e-elicit-v2", version: "0.0.0" },
    {
      versionNegotiation: { mode: { pin: V2 } },
      ...(elicit && { capabilities: { elicitation: { url: {} } } }),
    },
  );
  if (elicit) client.setRequestHandler("elicitation/create", elicit);
  await client.connect(new TransportV2(new URL(url)));
  return client;
}

async function status(client, intentCode) {
  const res = await client.callTool({ name: "intent_get_intent", arguments: { intentCode } });
  assert.notEqual(res.isError, true, JSON.stringify(res.content));
  return res.structuredContent.intent.status;
}

async function draftCount(isto) {
  const stats = await isto.run(["admin", "stats", "--json"]);
  assert.equal(stats.code, 0, stats.stdout + stats.stderr);
  return JSON.parse(stats.stdout).intents.total;
}

/** Checks an ordinary publish result and the elicitation the client received for it. */
function assertConsentAsked(isto, out, seen, { mode = "url" } = {}) {
  assert.equal(seen.length, 1, `elicitations received: ${JSON.stringify(seen)}`);
  const p = seen[0];
  assert.equal(p.mode, mode);
  assert.equal(p.url, out.consentUrl, "the URL is the result's consentUrl");
  assert.equal(new URL(p.url).host, new URL(isto.baseUrl).host, "on the holder's host");
  assert.match(p.url, new RegExp(`^${isto.baseUrl}/consent/`));
  assert.ok(typeof p.message === "string" && p.message.length > 20, `message ${p.message}`);
  for (const s of [p.url, p.message]) assert.ok(!s.includes(out.intentCode), "the intentCode is in the elicitation");
}

function assertOrdinary(res) {
  assert.notEqual(res.isError, true, JSON.stringify(res.content));
  const out = res.structuredContent;
  assert.ok(out.intentCode && out.consentUrl && out.expiresAt && out.intent?.id, JSON.stringify(out));
  assert.deepEqual(JSON.parse(res.content[0].text), out, "the text content is the same JSON");
  return out;
}

test("consent by URL-mode elicitation, SDK v1 (2025-11-25) and v2 (2026-07-28)", { skip: skipV2, timeout: 240000 }, (t) =>
  withIsto(t, { prefix: "isto-elicit-", start: false }, async (env) => {
    const config = path.join(env.work, "isto.toml");
    fs.writeFileSync(config, CONFIG);
    const isto = await env.start({ env: { ISTO_CONFIG: config } });
    const step = stepper(t);
    const clients = [];
    env.defer(async () => {
      for (const c of clients) await c.close();
    });
    const v1 = async (answer) => {
      const a = answer && answering(answer);
      const client = await connectV1(isto.mcpUrl, { elicit: a?.handler });
      clients.push(client);
      return { client, ...a };
    };
    const v2 = async (answer) => {
      const a = answer && answering(answer);
      const client = await connectV2(isto.mcpUrl, { elicit: a?.handler });
      clients.push(client);
      return { client, ...a };
    };

    await step("v1 without the capability: the ordinary result, no elicitation", async () => {
      const { client } = await v1(null);
      const out = assertOrdinary(await client.callTool({ name: "intent_publish_intent", arguments: publishArgs() }));
      assert.equal(out.intent.status, "awaiting_consent");
      assert.deepEqual(Object.keys(out).sort(), ["consentUrl", "expiresAt", "intent", "intentCode"]);
    });

    await step("v1 accept: the ordinary result, the consent page elicited, still a draft", async () => {
      const { client, seen } = await v1("accept");
      const out = assertOrdinary(await client.callTool({ name: "intent_publish_intent", arguments: publishArgs() }));
      assertConsentAsked(isto, out, seen);
      assert.ok(seen[0].elicitationId, "2025-11-25 carries an elicitationId");
      assert.equal(out.intent.status, "awaiting_consent");
      assert.equal(await status(client, out.intentCode), "awaiting_consent");
    });

    await step("v1 decline: the intent is withdrawn", async () => {
      const { client, seen } = await v1("decline");
      const out = assertOrdinary(await client.callTool({ name: "intent_publish_intent", arguments: publishArgs() }));
      assertConsentAsked(isto, out, seen);
      assert.equal(out.intent.status, "withdrawn");
      assert.equal(await status(client, out.intentCode), "withdrawn");
    });

    await step("v1 cancel: still a draft", async () => {
      const { client, seen } = await v1("cancel");
      const out = assertOrdinary(await client.callTool({ name: "intent_publish_intent", arguments: publishArgs() }));
      assertConsentAsked(isto, out, seen);
      assert.equal(await status(client, out.intentCode), "awaiting_consent");
    });

    await step("v1 never answers: the ordinary result after elicitation_wait_secs (2 s), still a draft", async () => {
      const { client, seen, release } = await v1("hang");
      const started = Date.now();
      try {
        const out = assertOrdinary(await client.callTool({ name: "intent_publish_intent", arguments: publishArgs() }));
        const took = Date.now() - started;
        assert.ok(took >= 1800 && took < 15000, `answered after ${took} ms`);
        assertConsentAsked(isto, out, seen);
        assert.equal(await status(client, out.intentCode), "awaiting_consent");
      } finally {
        release();
      }
    });

    await step("v2 without the capability: the ordinary result at once", async () => {
      const { client } = await v2(null);
      const res = await client.callTool({ name: "intent_publish_intent", arguments: publishArgs() }, { allowInputRequired: true });
      assert.notEqual(res.resultType, "input_required", JSON.stringify(res));
      assert.equal(assertOrdinary(res).intent.status, "awaiting_consent");
    });

    for (const [answer, want] of [
      ["accept", "awaiting_consent"],
      ["decline", "withdrawn"],
      ["cancel", "awaiting_consent"],
    ]) {
      await step(`v2 ${answer} through the SDK's MRTR driver: one draft, ${want}`, async () => {
        const { client, seen } = await v2(answer);
        const before = await draftCount(isto);
        const out = assertOrdinary(await client.callTool({ name: "intent_publish_intent", arguments: publishArgs() }));
        assertConsentAsked(isto, out, seen);
        assert.equal(out.intent.status, want);
        assert.equal(await status(client, out.intentCode), want);
        assert.equal(await draftCount(isto), before + 1, "the retry made a second draft");
      });
    }

    await step("v2 by hand: the InputRequiredResult, the same requestState twice → one draft", async () => {
      const { client } = await v2("accept");
      const args = publishArgs();
      const before = await draftCount(isto);
      const first = await client.callTool({ name: "intent_publish_intent", arguments: args }, { allowInputRequired: true });
      assert.equal(first.resultType, "input_required", JSON.stringify(first));
      const req = first.inputRequests?.consent;
      assert.equal(req?.method, "elicitation/create", JSON.stringify(first));
      assert.equal(req.params.mode, "url");
      assert.match(req.params.url, new RegExp(`^${isto.baseUrl}/consent/`));
      assert.ok(typeof first.requestState === "string" && first.requestState.length <= 2048, first.requestState);
      assert.equal(await draftCount(isto), before + 1);
      const retry = { name: "intent_publish_intent", arguments: args, requestState: first.requestState };
      // No answer yet: asked again with the same state, no new draft.
      const again = await client.callTool(retry, { allowInputRequired: true });
      assert.equal(again.resultType, "input_required");
      assert.equal(again.requestState, first.requestState);
      const answered = { ...retry, inputResponses: { consent: { action: "accept" } } };
      const a = assertOrdinary(await client.callTool(answered, { allowInputRequired: true }));
      const b = assertOrdinary(await client.callTool(answered, { allowInputRequired: true }));
      assert.equal(a.intentCode, b.intentCode);
      assert.equal(a.consentUrl, req.params.url, "the elicited URL is the consentUrl");
      assert.ok(!JSON.stringify(first).includes(a.intentCode), "the InputRequiredResult shows the intentCode");
      assert.equal(await draftCount(isto), before + 1, "a retry made a second draft");
      assert.equal(await status(client, a.intentCode), "awaiting_consent");
      // Once the draft is withdrawn, a retry without an answer is not asked again: it
      // gets the completed result with the intent as it now is.
      await client.callTool({ name: "intent_withdraw_intent", arguments: { intentCode: a.intentCode } });
      const late = assertOrdinary(await client.callTool(retry, { allowInputRequired: true }));
      assert.equal(late.intent.status, "withdrawn", JSON.stringify(late));
      assert.equal(await draftCount(isto), before + 1, "the late retry made a draft");
    });

    await step("v2 by hand: a forged, altered, foreign or oversized requestState is refused naming requestState", async () => {
      const { client } = await v2("accept");
      const args = publishArgs();
      const first = await client.callTool({ name: "intent_publish_intent", arguments: args }, { allowInputRequired: true });
      const before = await draftCount(isto);
      const s = first.requestState;
      const flip = s.slice(0, -2) + (s.at(-2) === "A" ? "B" : "A") + s.at(-1);
      const cases = [
        ["forged", "isto-rs1.abcd.AAAA.AAAA", /requestState is not one this holder issued/],
        ["altered", flip, /requestState is not one this holder issued/],
        ["invented", "eyJpZCI6ImludF94In0", /requestState is not one this holder issued/],
        ["oversized", s + "A".repeat(4096), /requestState is over 2048 characters/],
      ];
      for (const [what, requestState, rule] of cases) {
        await assert.rejects(
          client.callTool(
            { name: "intent_publish_intent", arguments: args, requestState, inputResponses: { consent: { action: "accept" } } },
            { allowInputRequired: true },
          ),
          (e) => rule.test(e.message),
          what,
        );
      }
      // The state of this call on another call's arguments.
      await assert.rejects(
        client.callTool(
          { name: "intent_publish_intent", arguments: publishArgs(), requestState: s, inputResponses: { consent: { action: "accept" } } },
          { allowInputRequired: true },
        ),
        (e) => /requestState belongs to another call/.test(e.message),
      );
      await assert.rejects(
        client.callTool(
          { name: "intent_publish_intent", arguments: args, requestState: s, inputResponses: { consent: { action: "yes" } } },
          { allowInputRequired: true },
        ),
        (e) => /inputResponses\.consent\.action must be one of accept, decline, cancel/.test(e.message),
      );
      assert.equal(await draftCount(isto), before, "a refused requestState made a draft");
    });

    await step("v2 by hand: inputResponses without requestState, or a requestState on another tool: refused, no draft", async () => {
      const { client } = await v2("accept");
      const args = publishArgs();
      const before = await draftCount(isto);
      await assert.rejects(
        client.callTool(
          { name: "intent_publish_intent", arguments: args, inputResponses: { consent: { action: "accept" } } },
          { allowInputRequired: true },
        ),
        (e) => /inputResponses without requestState: a retry of an input_required answer must send back its requestState unchanged/.test(e.message),
      );
      assert.equal(await draftCount(isto), before, "a retry without its requestState made a draft");
      const first = await client.callTool({ name: "intent_publish_intent", arguments: args }, { allowInputRequired: true });
      assert.equal(first.resultType, "input_required", JSON.stringify(first));
      const done = assertOrdinary(
        await client.callTool(
          { name: "intent_publish_intent", arguments: args, requestState: first.requestState, inputResponses: { consent: { action: "accept" } } },
          { allowInputRequired: true },
        ),
      );
      for (const name of ["intent_get_intent", "intent_withdraw_intent"]) {
        await assert.rejects(
          client.callTool(
            { name, arguments: { intentCode: done.intentCode }, requestState: first.requestState, inputResponses: { consent: { action: "accept" } } },
            { allowInputRequired: true },
          ),
          (e) => /requestState belongs to another call/.test(e.message),
          name,
        );
      }
      assert.equal(await status(client, done.intentCode), "awaiting_consent", "the refused withdraw ran");
      assert.equal(await draftCount(isto), before + 1);
    });
  }),
);
