// Bad input to the /mcp tools, GET-never-confirms, and Origin checks on POST /mcp.
//
// Every bad call must give a tool result with isError: true (a JSON-RPC error is
// accepted too, but reported) whose message names the offending field.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import test from "node:test";

import {
  Browser,
  connectMcp,
  extractUrls,
  findPostForm,
  httpRequest,
  initializeBody,
  mailIsFor,
  randomToken,
  resultText,
  withIsto,
} from "./lib/harness.mjs";

const LONG = "x".repeat(2001);
const randomCode = () => randomToken(32);

test("bad input, GET never confirms, Origin checks", { timeout: 10 * 60 * 1000 }, (t) => withIsto(t, { prefix: "isto-bad-" }, async (env) => {
  const { isto, smtp } = env;
  const mcp = await connectMcp(isto.mcpUrl);
  env.defer(() => mcp.close());
  await mcp.listTools();

  // A real draft, so that validation of other fields is tested with a valid code.
  const pub = await mcp.callTool("intent_publish_intent", { statement: "Hledám Škoda Fabia do 150 000 Kč", area: "CZ-64" });
  assert.ok(!pub.isError, `publish of a valid draft failed: ${resultText(pub)}`);
  const code = pub.structuredContent.intentCode;
  const consentUrl = pub.structuredContent.consentUrl;

  const rpcErrors = [];
  /** Call a tool and require an error whose message contains `field` (string or RegExp). */
  async function expectError(tool, args, field) {
    let text;
    try {
      const res = await mcp.callTool(tool, args);
      text = resultText(res);
      assert.equal(res.isError, true, `${tool}(${JSON.stringify(args).slice(0, 120)}) did not fail: ${text.slice(0, 400)}`);
    } catch (e) {
      if (e instanceof assert.AssertionError) throw e;
      text = `${e.message} ${JSON.stringify(e.data ?? "")}`;
      rpcErrors.push(`${tool}: ${text.slice(0, 200)}`);
    }
    if (field instanceof RegExp) assert.match(text, field, `${tool}: error does not match ${field}: ${text}`);
    else assert.ok(text.includes(field), `${tool}: error does not name "${field}": ${text}`);
    return text;
  }

  const cases = {
    intent_publish_intent: [
      ["missing statement", { area: "CZ-64" }, "statement"],
      ["missing area", { statement: "Hledám Škoda Fabia" }, "area"],
      ["statement is a number", { statement: 5, area: "CZ-64" }, "statement"],
      ["empty statement", { statement: "", area: "CZ-64" }, "statement"],
      ["statement of 2001 chars", { statement: LONG, area: "CZ-64" }, "statement"],
      ["budget.max is a string", { statement: "Hledám Fabii", area: "CZ-64", budget: { max: "x" } }, "budget.max"],
      ["budget.max negative", { statement: "Hledám Fabii", area: "CZ-64", budget: { max: -5, currency: "CZK" } }, "budget.max"],
      ["hiddenLimit is a string", { statement: "Hledám Fabii", area: "CZ-64", hiddenLimit: "abc" }, "hiddenLimit"],
      ["visibility unknown", { statement: "Hledám Fabii", area: "CZ-64", visibility: "public" }, "visibility"],
      ["buyBy not a date", { statement: "Hledám Fabii", area: "CZ-64", buyBy: "tomorrow" }, "buyBy"],
      ["unknown property email", { statement: "Hledám Fabii", area: "CZ-64", email: "a@b.c" }, "email"],
      ["unresolvable area", { statement: "Hledám Fabii", area: "Atlantis" }, "area"],
    ],
    intent_get_intent: [
      ["missing intentCode", {}, "intentCode"],
      ["intentCode is a number", { intentCode: 5 }, "intentCode"],
      ["oversized intentCode", { intentCode: "A".repeat(5000) }, /intentCode|not_found/],
      ["unknown property", { intentCode: randomCode(), extra: 1 }, "extra"],
      ["unknown intentCode", { intentCode: randomCode() }, "not_found"],
    ],
    intent_list_matches: [
      ["missing intentCode", {}, "intentCode"],
      ["intentCode is a number", { intentCode: 5 }, "intentCode"],
      ["limit 1000", { intentCode: code, limit: 1000 }, "limit"],
      ["limit 0", { intentCode: code, limit: 0 }, "limit"],
      ["limit is a string", { intentCode: code, limit: "x" }, "limit"],
      ["since not a time", { intentCode: code, since: "yesterday" }, "since"],
      ["unknown property", { intentCode: code, extra: 1 }, "extra"],
      ["unknown intentCode", { intentCode: randomCode() }, "not_found"],
    ],
    intent_withdraw_intent: [
      ["missing intentCode", {}, "intentCode"],
      ["intentCode is a number", { intentCode: 5 }, "intentCode"],
      ["oversized intentCode", { intentCode: "A".repeat(5000) }, /intentCode|not_found/],
      ["unknown property", { intentCode: randomCode(), reason: "x" }, "reason"],
      ["unknown intentCode", { intentCode: randomCode() }, "not_found"],
    ],
    intent_search_offers: [
      ["missing statement", {}, "statement"],
      ["statement is a number", { statement: 5 }, "statement"],
      ["statement of 2001 chars", { statement: LONG }, "statement"],
      ["limit 1000", { statement: "octavia", limit: 1000 }, "limit"],
      ["limit is a string", { statement: "octavia", limit: "x" }, "limit"],
      ["unresolvable area", { statement: "octavia", area: "Atlantis" }, "area"],
      ["unknown property", { statement: "octavia", email: "a@b.c" }, "email"],
    ],
  };

  for (const [tool, list] of Object.entries(cases)) {
    await t.test(tool, async (tt) => {
      for (const [name, args, field] of list) {
        await tt.test(name, () => expectError(tool, args, field));
      }
    });
  }

  await t.test("the draft survived the bad calls", async () => {
    const res = await mcp.callTool("intent_get_intent", { intentCode: code });
    assert.ok(!res.isError, resultText(res));
    assert.equal(res.structuredContent.intent.status, "awaiting_consent");
  });

  await t.test("not_found is the same for every unknown code", async () => {
    const a = await expectError("intent_get_intent", { intentCode: randomCode() }, "not_found");
    const b = await expectError("intent_get_intent", { intentCode: randomCode() }, "not_found");
    const norm = (s) => s.replace(/[A-Za-z0-9]{32}/g, "CODE");
    assert.equal(norm(a), norm(b), "not_found messages differ between unknown codes");
  });

  await t.test("GET of a confirmation link never confirms", async () => {
    const email = `get-${randomToken()}@buyer.example`;
    const browser = new Browser();
    const page = await browser.get(consentUrl);
    assert.equal(page.status, 200);
    const res = await browser.submitForm(page.url, page.body, { email, accept: "yes" }, { withInput: "email" });
    assert.ok(res.status < 400, `consent POST: ${res.status}`);
    const msg = await smtp.waitForMessage((m) => mailIsFor(m, email), { timeout: 30000, what: "confirmation e-mail" });
    const link = extractUrls(`${msg.text ?? ""}\n${msg.html ?? ""}`).find((u) => u.includes("/confirm/"));
    assert.ok(link, "no /confirm/ link in the confirmation e-mail");
    for (let i = 0; i < 3; i++) {
      const r = await new Browser().get(link); // like a mail scanner: no cookies
      assert.equal(r.status, 200, `GET confirm link: ${r.status}`);
      assert.ok(findPostForm(r.body, r.url, { actionPattern: "/confirm", prefer: true }), "confirmation page has no POST form");
    }
    const head = await httpRequest(link, { method: "HEAD" });
    assert.ok(head.status < 500, `HEAD confirm link: ${head.status}`);
    const st = await mcp.callTool("intent_get_intent", { intentCode: code });
    assert.equal(st.structuredContent.intent.status, "awaiting_email_confirmation", "a GET/HEAD confirmed the e-mail");
  });

  await t.test("POST /mcp with a foreign Origin is refused with 403", async () => {
    const headers = {
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
    };
    const evil = await httpRequest(isto.mcpUrl, { method: "POST", headers: { ...headers, Origin: "http://evil.example" }, body: initializeBody() });
    assert.equal(evil.status, 403, `foreign Origin got ${evil.status}: ${evil.body.slice(0, 300)}`);
    const own = await httpRequest(isto.mcpUrl, { method: "POST", headers: { ...headers, Origin: isto.origin }, body: initializeBody() });
    assert.notEqual(own.status, 403, `own Origin refused: ${own.body.slice(0, 300)}`);
    assert.ok(own.status >= 200 && own.status < 300, `own Origin got ${own.status}: ${own.body.slice(0, 300)}`);
    const none = await httpRequest(isto.mcpUrl, { method: "POST", headers, body: initializeBody() });
    assert.ok(none.status >= 200 && none.status < 300, `no Origin (non-browser client) got ${none.status}`);
    const rebinding = await httpRequest(isto.mcpUrl, {
      method: "POST",
      headers: { ...headers, Host: "evil.example.com" },
      body: initializeBody(),
    });
    assert.ok(rebinding.status >= 400 && rebinding.status < 500, `foreign Host header got ${rebinding.status}`);
  });

  if (rpcErrors.length) {
    t.diagnostic(`${rpcErrors.length} bad inputs gave JSON-RPC errors instead of isError results:`);
    for (const e of rpcErrors) t.diagnostic(`  ${e}`);
  }
}));
