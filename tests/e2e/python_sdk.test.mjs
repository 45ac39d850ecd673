// The official MCP Python SDK (`mcp` 2.x, installed by tests/run_all.sh) as an isto
// client over Streamable HTTP, on both revisions: lib/mcp_python_flow.py
// runs the SDK; this file starts isto and the SMTP server, plays the person (the consent
// page, the confirmation e-mail, the sign-up whose session signs the OAuth approval) and
// checks what the script reports, the wire included.
//
// * consent-link flow on /mcp with mode "legacy" (2025-11-25: initialize, a session) and
//   mode "2026-07-28" (stateless: no Mcp-Session-Id, Mcp-Method headers);
// * OAuth on /mcp/buyer with the SDK's OAuthClientProvider (401 → metadata → registration
//   → authorization → token), both modes;
// * the seller's OAuth on /mcp/seller the same way (a seller added with `isto admin seller
//   add`, signed in with a one-time e-mail link, presses Allow), both modes: the seller
//   tools, a pseudonymous intent listed without contact or hidden limit, a reply that
//   reaches the buyer; a buyer (with or without its /mcp/buyer token) is refused there.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import path from "node:path";
import readline from "node:readline";
import test from "node:test";

import { connectMcp, E2E_DIR, PYTHON, waitFor, withIsto } from "./lib/harness.mjs";
import { buyerWithToken, signUpBuyer } from "./lib/oauth.mjs";
import { addSeller, consentAndConfirm, signInWithLink, writeJsonl } from "./lib/seller.mjs";

const SCRIPT = path.join(E2E_DIR, "lib", "mcp_python_flow.py");
const MODES = ["legacy", "2026-07-28"];

function sdkVersion() {
  const r = spawnSync(PYTHON, ["-c", "import importlib.metadata as m; print(m.version('mcp'))"], { encoding: "utf8" });
  if (r.status !== 0) {
    throw new Error(`the MCP Python SDK is not installed for ${PYTHON}: run tests/run_all.sh or pip install "mcp==2.3.0"`);
  }
  return r.stdout.trim();
}

/**
 * Runs the script; `onLine(obj, child)` gets each JSON line of stdout. Resolves with the
 * lines once it exits 0; rejects with its stderr otherwise or after `timeout` ms.
 */
function runScript(args, { env = {}, onLine = () => {}, timeout = 90000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, [SCRIPT, ...args], { env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"] });
    const lines = [];
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`mcp_python_flow.py ${args[0]} timed out after ${timeout} ms\n${stderr}`));
    }, timeout);
    readline.createInterface({ input: child.stdout }).on("line", async (line) => {
      let obj;
      try {
        obj = JSON.parse(line);
      } catch {
        return;
      }
      lines.push(obj);
      try {
        await onLine(obj, child);
      } catch (e) {
        child.kill("SIGKILL");
        reject(e);
      }
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(lines);
      else reject(new Error(`mcp_python_flow.py ${args.join(" ")} exited ${code}\n${stderr}`));
    });
  });
}

/** The wire of one mode: a session on legacy, none on 2026-07-28 (with its headers). */
function assertWire(mode, wire) {
  const posts = wire.filter((w) => w.method === "POST" && w.rpc);
  assert.ok(posts.length >= 3, `too few MCP POSTs: ${JSON.stringify(wire)}`);
  const rpcs = posts.map((w) => w.rpc);
  if (mode === "legacy") {
    assert.ok(rpcs.includes("initialize"), `no initialize: ${rpcs}`);
    const later = posts.filter((w) => !["initialize", "server/discover"].includes(w.rpc));
    assert.ok(later.every((w) => w.headers["mcp-session-id"]), "a 2025-11-25 request without Mcp-Session-Id");
  } else {
    assert.ok(!rpcs.includes("initialize"), `a 2026-07-28 client sent initialize: ${rpcs}`);
    for (const w of wire) {
      assert.equal(w.headers["mcp-session-id"], undefined, `${w.rpc}: Mcp-Session-Id sent`);
      assert.equal(w.resHeaders["mcp-session-id"], undefined, `${w.rpc}: Mcp-Session-Id answered`);
    }
    for (const w of posts) {
      if (w.status === 401) continue;
      assert.equal(w.headers["mcp-protocol-version"], "2026-07-28", `${w.rpc}: Mcp-Protocol-Version`);
      assert.equal(w.headers["mcp-method"], w.rpc, `${w.rpc}: Mcp-Method`);
    }
  }
}

test(`MCP Python SDK: the consent-link flow on /mcp, ${MODES.join(" and ")}`, { timeout: 240000 }, async (t) => {
  t.diagnostic(`mcp ${sdkVersion()}`);
  await withIsto(t, { prefix: "isto-py-flow-" }, async (env) => {
    const { isto, smtp } = env;
    const offer = (ref, amount) => ({
      ref,
      title: `Škoda Octavia ${ref}`,
      description: "Škoda Octavia, testovací nabídka.",
      category: "vehicles",
      attributes: { make: "Škoda", model: "Octavia", year: 2015, fuel: "diesel" },
      price: { amount, currency: "CZK" },
      area: { country: "CZ", regions: ["CZ-64"], place: "Brno" },
      seller: { name: "e2e dealer", url: "https://dealer.example/" },
      url: `https://dealer.example/${ref}`,
    });
    const imported = await isto.importOffers(writeJsonl(env.work, "offers.jsonl", [offer("py-under", 199000), offer("py-over", 320000)]));
    assert.equal(imported.code, 0, imported.stderr);
    for (const mode of MODES) {
      await t.test(mode, async () => {
        const email = `py-${mode.replace(/\W/g, "")}-${Date.now()}@buyer.example`;
        const lines = await runScript(["consent", isto.mcpUrl, mode], {
          onLine: async (obj, child) => {
            if (obj.step !== "published") return;
            assert.equal(obj.status, "awaiting_consent");
            assert.match(obj.consentUrl, new RegExp(`^${isto.baseUrl}/consent/`));
            await consentAndConfirm(smtp, obj.consentUrl, email);
            child.stdin.write("confirmed\n");
          },
        });
        const done = lines.find((l) => l.step === "done");
        assert.ok(done, `no result line: ${JSON.stringify(lines)}`);
        assert.equal(done.protocolVersion, mode === "legacy" ? "2025-11-25" : "2026-07-28");
        assert.ok(done.tools.includes("intent_publish_intent"), done.tools.join(","));
        assert.equal(done.statusAfterConfirm, "active");
        assert.deepEqual(done.matchTitles, ["Škoda Octavia py-under"]);
        assert.equal(done.withdraw, "withdrawn");
        assert.equal(done.statusAfterWithdraw, "withdrawn");
        assertWire(mode, done.wire);
      });
    }
  });
});

test(`MCP Python SDK: OAuth on /mcp/buyer, ${MODES.join(" and ")}`, { timeout: 240000 }, async (t) => {
  sdkVersion();
  await withIsto(t, { prefix: "isto-py-oauth-" }, async (env) => {
    const { isto, smtp } = env;
    for (const mode of MODES) {
      await t.test(mode, async () => {
        const person = await signUpBuyer(isto, smtp);
        const cookie = person.browser.cookies.get("isto_session");
        const lines = await runScript(["oauth", `${isto.baseUrl}/mcp/buyer`, mode], { env: { ISTO_SESSION_COOKIE: cookie } });
        const done = lines.find((l) => l.step === "done");
        assert.ok(done, `no result line: ${JSON.stringify(lines)}`);
        assert.equal(done.protocolVersion, mode === "legacy" ? "2025-11-25" : "2026-07-28");
        assert.equal(done.registered, true, "dynamic client registration");
        assert.equal(done.authorizations, 1);
        assert.equal(done.published, "active");
        assert.equal(done.got, "active");
        assert.equal(done.matchesIsList, true);
        assert.equal(done.withdraw, "withdrawn");
        assert.equal(done.wire[0].status, 401, "the first request is refused with 401");
        const mcp = done.wire.filter((w) => w.path === "/mcp/buyer" && w.status !== 401);
        assert.ok(mcp.length >= 3 && mcp.every((w) => w.bearer), "an MCP request after authorization without the token");
        assertWire(mode, done.wire.filter((w) => w.path === "/mcp/buyer"));
      });
    }
  });
});

/** The structured content of a tool call made with the TS SDK (throws on a tool error). */
async function tool(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  assert.notEqual(res.isError, true, `${name} failed: ${JSON.stringify(res.content)}`);
  return res.structuredContent;
}

test(`MCP Python SDK: a seller's OAuth on /mcp/seller, ${MODES.join(" and ")}; a buyer refused there`, { timeout: 240000 }, async (t) => {
  sdkVersion();
  await withIsto(t, { prefix: "isto-py-seller-" }, async (env) => {
    const { isto, smtp } = env;
    const sellerUrl = `${isto.baseUrl}/mcp/seller`;
    const limit = 12000;
    const statement = "Hľadám Škoda Octavia combi (python)";
    const seller = await addSeller(isto, { name: "Auto Py s.r.o.", email: "seller-py@example.test", regions: ["SK-BL"] });

    // The buyer's intent: published on /mcp (TS SDK), consented and confirmed → active.
    const buyer = await connectMcp(isto.mcpUrl, { name: "isto-e2e-buyer-agent" });
    env.defer(() => buyer.close());
    const pub = await tool(buyer.client, "intent_publish_intent", {
      statement,
      criteria: { category: "vehicles", make: "Škoda", model: "Octavia" },
      area: "SK-BL",
      budget: { max: 15000, currency: "EUR" },
      hiddenLimit: limit,
      visibility: "pseudonymous",
    });
    await consentAndConfirm(smtp, pub.consentUrl, `py-pseudo-${Date.now()}@buyer.example`);
    assert.equal((await tool(buyer.client, "intent_get_intent", { intentCode: pub.intentCode })).intent.status, "active");

    const signin = await signInWithLink(isto, smtp, seller.email);
    const cookie = signin.browser.cookies.get("isto_session");
    const offerIds = [];
    for (const mode of MODES) {
      await t.test(`seller, ${mode}`, async () => {
        const reply = {
          source: { kind: "reply" },
          title: `Škoda Octavia Combi 2.0 TDI (python ${mode})`,
          category: "vehicles",
          attributes: { make: "Škoda", model: "Octavia", body: "combi", fuel: "diesel", year: 2017 },
          price: { amount: 11000, currency: "EUR" },
          area: "SK-BL",
          url: `https://auto-py.example/octavia-${mode}`,
        };
        const lines = await runScript(["seller", sellerUrl, mode], { env: { ISTO_SESSION_COOKIE: cookie, ISTO_REPLY: JSON.stringify(reply) } });
        const done = lines.find((l) => l.step === "done");
        assert.ok(done, `no result line: ${JSON.stringify(lines)}`);
        assert.equal(done.protocolVersion, mode === "legacy" ? "2025-11-25" : "2026-07-28");
        assert.equal(done.registered, true, "dynamic client registration");
        assert.equal(done.authorizations, 1);
        assert.equal(done.authorizationQuery?.resource, sellerUrl, JSON.stringify(done.authorizationQuery));
        assert.deepEqual(String(done.authorizationQuery?.scope ?? "").split(" ").sort(), ["demand", "offers"]);
        assert.equal(done.redirect.iss, isto.baseUrl);
        assert.deepEqual(String(done.tokenScope ?? "").split(" ").sort(), ["demand", "offers"], `token scope: ${done.tokenScope}`);
        for (const name of ["intent_submit_offer", "intent_list_open_intents", "intent_demand_summary", "intent_search_offers"]) {
          assert.ok(done.tools.includes(name), `tools/list lacks ${name}: ${done.tools}`);
        }
        for (const name of ["intent_publish_intent", "intent_get_intent", "intent_list_matches"]) {
          assert.ok(!done.tools.includes(name), `/mcp/seller offers the buyer tool ${name}`);
        }
        const intents = done.openIntents.intents;
        assert.equal(intents.length, 1, JSON.stringify(intents));
        assert.equal(intents[0].statement, statement);
        assert.match(intents[0].id, /^hdl_/);
        assert.notEqual(intents[0].id, pub.intent.id);
        assert.match(intents[0].pseudonym ?? "", /^buyer-\S+$/);
        const json = JSON.stringify(done.openIntents);
        assert.ok(!json.includes("@"), `an e-mail-like string in the seller's view: ${json}`);
        assert.ok(!json.includes(String(limit)) && !/12[\s\u00a0\u202f.,']?000/.test(json), `the hidden limit in the seller's view: ${json}`);
        assert.ok(!/hiddenLimit/i.test(json), `a hidden-limit field in the seller's view: ${json}`);
        assert.ok(!json.includes(pub.intentCode) && !json.includes(pub.intent.id.slice(4)), `the intentCode or id in the seller's view: ${json}`);
        assert.equal(done.submitted.accepted, true, JSON.stringify(done.submitted));
        assert.match(done.submitted.offerId, /^off_/);
        offerIds.push(done.submitted.offerId);
        assert.equal(done.wire[0].status, 401, "the first request is refused with 401");
        const mcp = done.wire.filter((w) => w.path === "/mcp/seller" && w.status !== 401);
        assert.ok(mcp.length >= 3 && mcp.every((w) => w.bearer), "an MCP request after authorization without the token");
        assertWire(mode, done.wire.filter((w) => w.path === "/mcp/seller"));
      });
    }

    await t.test("the buyer's list_matches shows the seller's replies", async () => {
      let matches = [];
      await waitFor(
        async () => {
          matches = (await tool(buyer.client, "intent_list_matches", { intentCode: pub.intentCode })).matches;
          return matches.length >= offerIds.length;
        },
        { timeout: 15000, interval: 300, what: "the replies among the buyer's matches" },
      );
      assert.deepEqual(matches.map((m) => m.offer.id).sort(), [...offerIds].sort());
      for (const m of matches) {
        assert.equal(m.offer.inReplyTo, pub.intent.id);
        assert.equal(m.offer.seller?.id, seller.sellerId);
      }
    });

    const other = await buyerWithToken(isto, smtp);
    const buyerCookie = other.person.browser.cookies.get("isto_session");
    for (const mode of MODES) {
      await t.test(`a buyer on /mcp/seller, ${mode}, without and with its /mcp/buyer token: 401, the authorization refused (403)`, async (st) => {
        const lines = await runScript(["refused", sellerUrl, mode], {
          env: { ISTO_SESSION_COOKIE: buyerCookie, ISTO_PRELOAD: JSON.stringify({ client: other.client, tokens: other.tokens }) },
        });
        const outs = lines.filter((l) => l.step === "refused" || l.step === "served");
        assert.deepEqual(outs.map((o) => o.preloaded), [false, true], `result lines: ${JSON.stringify(lines)}`);
        for (const out of outs) {
          const what = out.preloaded ? "with the buyer's token" : "without a token";
          st.diagnostic(`${what}: ${out.wire.map((w) => `${w.method} ${w.path} ${w.rpc ?? ""} → ${w.status}`).join("; ")}`);
          assert.equal(out.step, "refused", `${what}: the buyer was served on /mcp/seller: ${JSON.stringify(out.tools)}`);
          assert.equal(out.status, 403, `${what}: the authorization page for a buyer`);
          assert.equal(out.authorizationQuery?.resource, sellerUrl, what);
          const mcp = out.wire.filter((w) => w.path === "/mcp/seller");
          assert.ok(mcp.length >= 1 && mcp.every((w) => w.status === 401), `${what}: /mcp/seller: ${mcp.map((w) => w.status)}`);
          assert.equal(mcp[0].bearer, out.preloaded, `${what}: the first request's Authorization`);
          assert.ok(!out.wire.some((w) => w.path === "/oauth/token" && w.status === 200), `${what}: a token was issued for /mcp/seller`);
        }
      });
    }
  });
});
