// The conformance runner's server scenarios for MCP 2026-07-28 against
// `isto serve` /mcp, with the 0.2.0 pre-release of @modelcontextprotocol/conformance
// (npm alias `conformance-next`, the one that has 2026-07-28 scenarios):
//   conformance server --url …/mcp --scenario S --spec-version 2026-07-28
//                      --expected-failures conformance-2026-baseline.yaml
// A scenario passes when the runner exits 0: every failing check is in the baseline (checks
// that need the runner's own fixture tools or prompts/resources, which isto does not
// have) and no baseline entry passes. conformance.test.mjs covers 2025-11-25.
//
// The runner is bundled for Node >= 22; on older Node lib/node20-compat/register-next.mjs
// lets it start (it only stubs fs.globSync).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import test from "node:test";

import { E2E_DIR, withIsto } from "./lib/harness.mjs";

const SCENARIOS = [
  "server-stateless",
  "caching",
  "http-header-validation",
  "dns-rebinding-protection",
  "tools-list",
  "server-sse-multiple-streams",
];
const BASELINE = path.join(E2E_DIR, "conformance-2026-baseline.yaml");

const require = createRequire(import.meta.url);
const pkgPath = require.resolve("conformance-next/package.json");
const pkg = JSON.parse(fs.readFileSync(pkgPath, "utf8"));
const RUNNER = path.join(path.dirname(pkgPath), typeof pkg.bin === "string" ? pkg.bin : Object.values(pkg.bin)[0]);
const COMPAT = path.join(E2E_DIR, "lib", "node20-compat", "register-next.mjs");

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

test(`MCP conformance 2026-07-28 (${pkg.name}@${pkg.version}): ${SCENARIOS.join(", ")}`, { timeout: 10 * 60 * 1000 }, (t) =>
  withIsto(t, { prefix: "isto-conf26-" }, async ({ isto }) => {
    const listed = await runConformance(["list", "--server"]);
    for (const scenario of SCENARIOS) {
      await t.test(scenario, async () => {
        const line = listed.out.split("\n").find((l) => l.trim().startsWith(`- ${scenario} `));
        assert.ok(line?.includes("2026-07-28"), `the runner has no 2026-07-28 scenario ${scenario}:\n${listed.out}`);
        const res = await runConformance([
          "server", "--url", isto.mcpUrl, "--scenario", scenario,
          "--spec-version", "2026-07-28", "--expected-failures", BASELINE,
        ]);
        const summary = res.out.match(/Passed: .*/)?.[0] ?? "(no summary)";
        t.diagnostic(`${scenario}: exit ${res.code}, ${summary}`);
        assert.equal(res.code, 0, `conformance scenario ${scenario} (2026-07-28) failed:\n${res.out}`);
      });
    }
  }),
);
