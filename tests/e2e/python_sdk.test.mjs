// The official MCP Python SDK (`mcp` 2.x, installed by tests/run_all.sh) as an isto
// client over Streamable HTTP, on both revisions (issue 12 point 1): lib/mcp_python_flow.py
// runs the SDK; this file starts isto and the SMTP server, plays the person (the consent
// page, the confirmation e-mail, the sign-up whose session signs the OAuth approval) and
// checks what the script reports, the wire included.
//
// * consent-link flow on /mcp with mode "legacy" (2025-11-25: initialize, a session) and
//   mode "2026-07-28" (stateless: no Mcp-Session-Id, Mcp-Method headers);
// * OAuth on /mcp/buyer with the SDK's OAuthClientProvider (401 → metadata → registration
//   → authorization → token), both modes.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import path from "node:path";
import readline from "node:readline";
import test from "node:test";

import { E2E_DIR, PYTHON, withIsto } from "./lib/harness.mjs";
import { signUpBuyer } from "./lib/oauth.mjs";
import { consentAndConfirm, writeJsonl } from "./lib/seller.mjs";

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
