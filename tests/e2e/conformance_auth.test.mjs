// The official MCP conformance runner's `authorization` command against isto's own
// authorization server:
//   conformance authorization --url <issuer> --client-id <id> --resource <issuer>/mcp/buyer
//                             --port <callback port> -o <dir>
// Scenarios: authorization-server-metadata-endpoint, authorization-code-grant.
//
// The `authorization` command exists only in the 0.2.0 pre-releases, so that runner is
// installed under the npm alias `conformance-next` (package.json) beside the 0.1.16 used
// by conformance.test.mjs. It is bundled for Node >= 22; lib/node20-compat/register-next.mjs
// lets it start on Node 20.
//
// How the runner drives the interactive part (read from its dist/index.js): it does not
// follow redirects or sign in itself, and takes no pre-issued tokens. It needs a client
// registered beforehand (--client-id; it never registers one), starts an HTTP server on
// http://127.0.0.1:<port>/callback, prints the authorization URL ("Access the following
// URL in your browser …") and waits up to five minutes for a browser to land on the
// callback. It then checks the callback URL (no error, state echoed, one code, iss equal
// to the metadata issuer if present), exchanges the code with PKCE at the token endpoint
// and checks the answer (200, application/json, Cache-Control no-store, access_token and
// token_type). The code grant reads the metadata found by the first scenario, so both run
// in one invocation (no --scenario: `--scenario authorization-code-grant` alone always
// fails with "Invalid authorization server metadata").
//
// Here the harness is the browser: it creates a buyer account (/signup + the
// confirmation e-mail from the SMTP sink), registers the runner's client with DCR
// (a public client: the runner authenticates with `none` whenever the server lists it,
// even when given --client-secret), reads the URL from the runner's output, signs the
// person in on /signin, POSTs Allow on the consent page and delivers the redirect to the
// runner's callback. The test passes only when the runner exits 0 and no check of either
// scenario is a FAILURE.
//
// Spec versions: the runner is started without --spec-version, so every check of both
// scenarios runs. Its --spec-version only filters checks by the revision they were
// introduced in (the scenarios do not depend on it): for 2026-07-28 the authorization
// scenarios are these same two, with the same checks (metadata, its client ID metadata
// document field, the code grant and token response). A second test asks the runner's
// `list --authorization --spec-version 2026-07-28` and fails when it names a scenario
// not run here.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import test from "node:test";
import { createRequire } from "node:module";

import { Browser, E2E_DIR, freePort, withIsto } from "./lib/harness.mjs";
import { actAsPerson, parseRedirect, registerClient, signUpBuyer } from "./lib/oauth.mjs";

const SCENARIOS = ["authorization-server-metadata-endpoint", "authorization-code-grant"];

const require = createRequire(import.meta.url);
const pkgPath = require.resolve("conformance-next/package.json");
const pkg = JSON.parse(fs.readFileSync(pkgPath, "utf8"));
const RUNNER = path.join(path.dirname(pkgPath), typeof pkg.bin === "string" ? pkg.bin : pkg.bin.conformance);
const COMPAT = path.join(E2E_DIR, "lib", "node20-compat", "register-next.mjs");

/** Start the runner; resolves `done` with {code, out}; `out()` is the output so far. */
function startRunner(args, timeout) {
  const child = spawn(process.execPath, ["--import", COMPAT, RUNNER, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
  });
  let out = "";
  const listeners = new Set();
  const onData = (d) => {
    out += d;
    for (const l of listeners) l(out);
  };
  child.stdout.on("data", onData);
  child.stderr.on("data", onData);
  const done = new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`conformance ${args.join(" ")} timed out after ${timeout} ms\n${out}`));
    }, timeout);
    child.once("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
  /** Resolves with the first output match of `re`, or rejects when the runner exits first. */
  function waitForOutput(re, what) {
    return new Promise((resolve, reject) => {
      const check = (text) => {
        const m = text.match(re);
        if (m) {
          listeners.delete(check);
          resolve(m);
        }
      };
      listeners.add(check);
      check(out);
      done.then(
        ({ code }) => reject(new Error(`the runner exited (${code}) before printing ${what}:\n${out}`)),
        reject,
      );
    });
  }
  return { child, done, out: () => out, waitForOutput, kill: () => child.kill("SIGKILL") };
}

/** checks.json of one scenario from the runner's -o directory. */
function scenarioChecks(outDir, scenario) {
  if (!fs.existsSync(outDir)) return null;
  const dir = fs
    .readdirSync(outDir)
    .filter((d) => d.startsWith(`authorization-server-${scenario}-`))
    .sort()
    .pop();
  if (!dir) return null;
  return JSON.parse(fs.readFileSync(path.join(outDir, dir, "checks.json"), "utf8"));
}

test(`MCP conformance authorization (${pkg.name}@${pkg.version}): ${SCENARIOS.join(", ")}`, { timeout: 120000 }, (t) => withIsto(t, { prefix: "isto-conf-auth-" }, async (env) => {
  const { work, smtp, isto } = env;
  const outDir = path.join(work, "results");
  let runner = null;
  env.defer(() => runner?.kill());

  const issuer = isto.baseUrl; // isto's issuer: the public URL, no trailing slash
  const resource = `${issuer}/mcp/buyer`;

  // The person: a buyer account made through sign-up and the confirmation e-mail. The
  // browser that plays the person during authorization starts signed out, so the holder
  // must send it through /signin.
  const account = await signUpBuyer(isto, smtp);

  // The runner's client, registered as its --help says: http://127.0.0.1:<port>/callback.
  const port = await freePort();
  const reg = await registerClient(issuer, {
    client_name: "MCP conformance runner",
    redirect_uris: [`http://127.0.0.1:${port}/callback`],
    grant_types: ["authorization_code"],
    response_types: ["code"],
    token_endpoint_auth_method: "none",
  });
  assert.equal(reg.status, 201, `client registration failed: ${JSON.stringify(reg.body)}`);
  const clientId = reg.body.client_id;

  runner = startRunner(
    ["authorization", "--url", issuer, "--client-id", clientId, "--resource", resource, "--port", String(port), "-o", outDir],
    60000,
  );

  // The person's part, driven by the URL the runner prints.
  const person = (async () => {
    const escaped = `${issuer}/oauth/authorize?`.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const [url] = await runner.waitForOutput(new RegExp(`${escaped}\\S+`), "the authorization URL");
    const browser = new Browser();
    const outcome = await actAsPerson(browser, url, { credentials: account });
    if (outcome.kind !== "redirect") {
      throw new Error(
        `the authorization page did not redirect back to the runner: HTTP ${outcome.status}: ` +
          `${outcome.text?.slice(0, 400)} (${outcome.steps.join("; ")})`,
      );
    }
    assert.ok(
      outcome.steps.some((s) => s.startsWith("POST /signin")),
      `the holder did not ask a signed-out person to sign in: ${outcome.steps.join("; ")}`,
    );
    const back = parseRedirect(outcome.location);
    t.diagnostic(`person: ${outcome.steps.join("; ")}; back to ${back.url.origin}${back.url.pathname} with ${[...back.params.keys()].join(", ")}`);
    // Deliver the redirect to the runner's callback server, as the browser would.
    const res = await fetch(outcome.location, { redirect: "manual" });
    await res.text();
    return { outcome, callbackStatus: res.status };
  })();
  // If the person's part fails, stop the runner now instead of letting it wait 5 minutes.
  person.catch(() => runner.kill());

  const [personResult, result] = await Promise.allSettled([person, runner.done]);
  if (result.status === "rejected") throw result.reason; // timed out or did not start
  const { code, out } = result.value;
  const summary = out.match(/=== SUMMARY ===[\s\S]*/)?.[0]?.trim() ?? "(no summary)";
  t.diagnostic(`runner exit ${code}\n${summary}`);

  await t.test("the person signs in and allows (harness)", () => {
    if (personResult.status === "rejected") {
      const why = personResult.reason?.message ?? String(personResult.reason);
      // When the runner gave up before printing the URL, its output is in the message.
      assert.fail(`driving the person's part failed: ${why}`);
    }
  });
  for (const scenario of SCENARIOS) {
    await t.test(scenario, () => {
      const checks = scenarioChecks(outDir, scenario);
      assert.ok(checks, `the runner wrote no results for ${scenario}:\n${out}`);
      for (const c of checks) {
        t.diagnostic(`${scenario}: [${c.id}] ${c.status}${c.errorMessage ? `: ${c.errorMessage}` : ""}`);
      }
      const failures = checks.filter((c) => c.status === "FAILURE" || c.status === "SKIPPED");
      assert.deepEqual(
        failures.map((c) => `${c.id}: ${c.status}: ${c.errorMessage ?? c.description}`),
        [],
        `${scenario} has failed or skipped checks:\n${JSON.stringify(failures, null, 2)}`,
      );
      assert.ok(checks.some((c) => c.status === "SUCCESS"), `${scenario}: no successful check:\n${JSON.stringify(checks, null, 2)}`);
    });
  }
  await t.test("runner exit status", () => {
    assert.equal(code, 0, `conformance authorization failed:\n${out}`);
  });
}));

test(`MCP conformance authorization (${pkg.name}@${pkg.version}): the runner's 2026-07-28 authorization scenarios are the ones run above`, () => {
  const r = spawnSync(process.execPath, ["--import", COMPAT, RUNNER, "list", "--authorization", "--spec-version", "2026-07-28"], {
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
    timeout: 60000,
  });
  assert.equal(r.status, 0, `conformance list failed: ${r.stdout}\n${r.stderr}`);
  const listed = [...r.stdout.matchAll(/^\s*-\s+(\S+)/gm)].map((m) => m[1]);
  assert.ok(listed.length > 0, `no scenario listed:\n${r.stdout}`);
  assert.deepEqual(listed.filter((name) => !SCENARIOS.includes(name)), [], `2026-07-28 authorization scenarios not run here:\n${r.stdout}`);
});
