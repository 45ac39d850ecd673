// Runs scenarios of the official MCP conformance suite (@modelcontextprotocol/conformance)
// against `isto serve`:
//   conformance server --url http://127.0.0.1:PORT/mcp --scenario <name>
// A scenario passes when the runner exits 0 (no FAILURE checks).
//
// The runner is bundled for Node >= 22; on older Node it runs with a small loader
// (lib/node20-compat) that supplies fs.globSync, which only its tier-check command uses.
// Override the scenario list with ISTO_CONFORMANCE_SCENARIOS="a,b,c".

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import test from "node:test";
import { createRequire } from "node:module";

import { E2E_DIR, withIsto } from "./lib/harness.mjs";

const SCENARIOS = (process.env.ISTO_CONFORMANCE_SCENARIOS ?? "server-initialize,ping,dns-rebinding-protection")
  .split(",")
  .map((x) => x.trim())
  .filter(Boolean);

const require = createRequire(import.meta.url);
const pkgPath = require.resolve("@modelcontextprotocol/conformance/package.json");
const pkg = JSON.parse(fs.readFileSync(pkgPath, "utf8"));
const RUNNER = path.join(path.dirname(pkgPath), typeof pkg.bin === "string" ? pkg.bin : pkg.bin.conformance);
const COMPAT = path.join(E2E_DIR, "lib", "node20-compat", "register.mjs");

function runConformance(args, timeout = 120000) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", COMPAT, RUNNER, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`conformance ${args.join(" ")} timed out\n${out}`));
    }, timeout);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

test(`MCP conformance (${pkg.name}@${pkg.version}): ${SCENARIOS.join(", ")}`, { timeout: 10 * 60 * 1000 }, (t) => withIsto(t, { prefix: "isto-conf-" }, async (env) => {
  const { isto } = env;

  const listed = await runConformance(["list", "--server"]);
  for (const scenario of SCENARIOS) {
    await t.test(scenario, async () => {
      assert.ok(listed.out.includes(`- ${scenario}`), `the runner does not know scenario ${scenario}:\n${listed.out}`);
      const res = await runConformance(["server", "--url", isto.mcpUrl, "--scenario", scenario]);
      const summary = res.out.match(/Passed: .*/)?.[0] ?? "(no summary)";
      t.diagnostic(`${scenario}: exit ${res.code}, ${summary}`);
      assert.equal(res.code, 0, `conformance scenario ${scenario} failed:\n${res.out}`);
    });
  }
}));
