#!/usr/bin/env bash
# Runs all of isto's tests: the Rust tests (cargo test), the integration tests once more
# on a throw-away PostgreSQL cluster (ISTO_TEST_BACKEND=postgres), then the end-to-end tests in
# tests/e2e (node:test against the debug binary, a real SMTP server and the real
# listings in ../shared/data), which include the MCP conformance scenarios
# (server-initialize, ping, dns-rebinding-protection).
#
# Usage: bash tests/run_all.sh
# Env:   ISTO_BIN       binary for the e2e tests (default target/debug/isto)
#        ISTO_E2E_KEEP  keep the tests' temporary directories
#        ISTO_PG_PASS_TIMEOUT  seconds the PostgreSQL pass may take (default 2400)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
E2E="$ROOT/tests/e2e"
cd "$ROOT"

section() { printf '\n========== %s ==========\n' "$*"; }

section "test prerequisites"
if python3 -c 'import aiosmtpd' 2>/dev/null; then
  echo "aiosmtpd: present"
else
  echo "aiosmtpd: installing from PyPI"
  # A Debian-managed python3 refuses plain pip installs (PEP 668); then install for the user.
  python3 -m pip install --quiet aiosmtpd ||
    python3 -m pip install --quiet --user --break-system-packages aiosmtpd
  python3 -c 'import aiosmtpd'
fi

# The official MCP Python SDK, for python_sdk.test.mjs: pinned.
MCP_PY_VERSION=2.3.0
if [[ "$(python3 -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null || true)" == "$MCP_PY_VERSION" ]]; then
  echo "mcp (Python SDK) $MCP_PY_VERSION: present"
else
  echo "mcp (Python SDK): installing $MCP_PY_VERSION from PyPI"
  python3 -m pip install --quiet "mcp==$MCP_PY_VERSION" ||
    python3 -m pip install --quiet --user --break-system-packages "mcp==$MCP_PY_VERSION"
  python3 -c 'import mcp'
fi

# npm ci when node_modules is missing or older than the lock file.
stamp="$E2E/node_modules/.package-lock.json"
if [[ ! -d "$E2E/node_modules" || ! -f "$stamp" || "$E2E/package-lock.json" -nt "$stamp" || "$E2E/package.json" -nt "$stamp" ]]; then
  echo "tests/e2e: npm ci"
  (cd "$E2E" && npm ci --no-audit --no-fund --loglevel=error)
else
  echo "tests/e2e/node_modules: up to date"
fi

section "cargo build"
cargo build

section "cargo test"
cargo test

# The integration tests once more on the PostgreSQL store: the same kit, each holder in
# a new database of a throw-away cluster the kit starts (src/store/testpg.rs). Tests
# about the redb file itself say so on stderr and run their PostgreSQL counterpart.
section "integration tests on PostgreSQL (ISTO_TEST_BACKEND=postgres cargo test --test it)"
pg_bins=(/usr/lib/postgresql/*/bin/initdb)
if command -v initdb >/dev/null 2>&1 || [[ -x "${pg_bins[0]}" ]]; then
  # Bounded: the pass takes minutes here; a hang fails the run instead of stalling it.
  started=$SECONDS
  ISTO_TEST_BACKEND=postgres timeout --kill-after=30 "${ISTO_PG_PASS_TIMEOUT:-2400}" cargo test --test it
  echo "PostgreSQL pass of tests/it: $((SECONDS - started)) s"
elif [[ -n "${CI:-}" ]]; then
  echo "PostgreSQL's server binaries (initdb, pg_ctl) are missing in CI: .ci/run installs them" >&2
  exit 1
else
  echo "SKIPPED: PostgreSQL's server binaries (initdb, pg_ctl) are not installed (Debian: postgresql)"
fi

section "end-to-end tests (tests/e2e/*.test.mjs: flow, bad input, abuse, MCP conformance, …)"
if [[ ! -d "$ROOT/../shared/data" ]]; then
  echo "note: $ROOT/../shared/data is absent: the flow test will be skipped"
fi
log="$(mktemp -t isto-e2e-XXXXXX.log)"
trap 'rm -f "$log"' EXIT
set +e
(cd "$E2E" && npm test --silent) 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

# The spec reporter ends with "ℹ pass N" / "ℹ fail N" lines (TAP: "# pass N").
passed="$(grep -aE '^(ℹ|#) pass [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$' || true)"
failed="$(grep -aE '^(ℹ|#) fail [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$' || true)"
skipped="$(grep -aE '^(ℹ|#) skipped [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$' || true)"
echo
echo "e2e: ${passed:-0} passed, ${failed:-0} failed, ${skipped:-0} skipped"
if [[ $status -ne 0 ]]; then
  echo "end-to-end tests FAILED (exit $status)" >&2
  exit "$status"
fi
if [[ -z "$passed" || "$passed" -eq 0 ]]; then
  echo "end-to-end tests: no test passed" >&2
  exit 1
fi
# In CI every prerequisite is installed by .ci/run, so a skipped test never ran for a
# reason CI should have removed: that is a failure, not a pass.
if [[ -n "${CI:-}" && "${skipped:-0}" -ne 0 ]]; then
  echo "end-to-end tests: $skipped skipped in CI (a prerequisite .ci/run installs is missing):" >&2
  grep -aE '﹣|# SKIP' "$log" >&2 || true
  exit 1
fi
