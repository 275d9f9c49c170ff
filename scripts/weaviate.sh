#!/usr/bin/env bash
# Runs a Weaviate cluster of 1 or 3 nodes on loopback for rcpd's weaviate
# backend (rcpd serve --backend weaviate), building the server from the Go
# module proxy into a cache the first time (about 4 minutes on 2 cores).
#
# Usage:
#   bash scripts/weaviate.sh binary        # print the server binary's path (build when absent)
#   bash scripts/weaviate.sh start [N]     # start N nodes (1 or 3; default 1)
#   bash scripts/weaviate.sh stop  [N]     # stop them (SIGTERM, then SIGKILL)
#   bash scripts/weaviate.sh kill I        # kill -9 node I (0-based), for failure drills
#   bash scripts/weaviate.sh restart I     # start node I again (after kill)
#   bash scripts/weaviate.sh status [N]
#
# Environment:
#   RCPGO_WEAVIATE_BIN    use this weaviate-server binary (no build)
#   RCPGO_WEAVIATE_CACHE  build cache (default ${XDG_CACHE_HOME:-~/.cache}/rcpgo/weaviate)
#   WEAVIATE_DIR          data, logs and pid files (default ${TMPDIR:-/tmp}/rcpgo-weaviate)
#   WEAVIATE_PORT         REST port of node 0 (default 8080); node i listens on
#                         REST PORT+i, gRPC GRPC+i, gossip/data GOSSIP+3i/+1,
#                         RAFT/RAFT-RPC RAFT+2i/+1
#   WEAVIATE_GRPC_PORT, WEAVIATE_GOSSIP_PORT, WEAVIATE_RAFT_PORT
#                         the other bases (default 50051, 7100, 8300): give
#                         two clusters different ones to run them side by side
#
# Node i is CLUSTER_HOSTNAME node<i>; with 3 nodes RAFT_BOOTSTRAP_EXPECT=3 and
# every node joins node0's gossip port. Anonymous access, no modules, no
# vectorizer (rcpd embeds), telemetry off.
set -euo pipefail

VERSION="${RCPGO_WEAVIATE_VERSION:-v1.35.2}"
CACHE="${RCPGO_WEAVIATE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rcpgo/weaviate}"
DIR="${WEAVIATE_DIR:-${TMPDIR:-/tmp}/rcpgo-weaviate}"
PORT="${WEAVIATE_PORT:-8080}"
GRPC="${WEAVIATE_GRPC_PORT:-50051}"
GOSSIP="${WEAVIATE_GOSSIP_PORT:-7100}"
RAFT="${WEAVIATE_RAFT_PORT:-8300}"

binary() {
  if [[ -n "${RCPGO_WEAVIATE_BIN:-}" ]]; then
    [[ -x "$RCPGO_WEAVIATE_BIN" ]] || { echo "weaviate.sh: RCPGO_WEAVIATE_BIN=$RCPGO_WEAVIATE_BIN is not executable" >&2; exit 1; }
    echo "$RCPGO_WEAVIATE_BIN"
    return
  fi
  local bin="$CACHE/$VERSION/weaviate-server"
  if [[ ! -x "$bin" ]]; then
    command -v go >/dev/null || { echo "weaviate.sh: go is required to build weaviate-server" >&2; exit 1; }
    mkdir -p "$CACHE/$VERSION"
    echo "weaviate.sh: building weaviate-server $VERSION into $CACHE/$VERSION (about 4 min on 2 cores)" >&2
    GOBIN="$CACHE/$VERSION" GOFLAGS=-mod=mod go install "github.com/weaviate/weaviate/cmd/weaviate-server@$VERSION" >&2
  fi
  echo "$bin"
}

ports() { # node index → REST gRPC gossip data raft raft-rpc
  local i=$1
  echo "$((PORT + i)) $((GRPC + i)) $((GOSSIP + 3 * i)) $((GOSSIP + 1 + 3 * i)) $((RAFT + 2 * i)) $((RAFT + 1 + 2 * i))"
}

start_node() {
  local i=$1 n=$2 bin=$3
  read -r rest grpc gossip data raft rpc <<<"$(ports "$i")"
  local join="" k
  for ((k = 0; k < n; k++)); do
    read -r _ _ _ _ kraft _ <<<"$(ports "$k")"
    join+="${join:+,}node$k:$kraft"
  done
  mkdir -p "$DIR/node$i"
  (
    export PERSISTENCE_DATA_PATH="$DIR/node$i/data"
    export AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true
    export DEFAULT_VECTORIZER_MODULE=none ENABLE_MODULES=""
    export DISABLE_TELEMETRY=true PROMETHEUS_MONITORING_ENABLED=false
    export QUERY_DEFAULTS_LIMIT=25 LIMIT_RESOURCES=true GOMAXPROCS="${WEAVIATE_GOMAXPROCS:-2}"
    export CLUSTER_HOSTNAME="node$i" CLUSTER_IN_LOCALHOST=true
    export CLUSTER_ADVERTISE_ADDR=127.0.0.1 CLUSTER_BIND_ADDR=127.0.0.1
    export CLUSTER_GOSSIP_BIND_PORT="$gossip" CLUSTER_DATA_BIND_PORT="$data"
    export RAFT_PORT="$raft" RAFT_INTERNAL_RPC_PORT="$rpc" RAFT_JOIN="$join" RAFT_BOOTSTRAP_EXPECT="$n"
    export GRPC_PORT="$grpc"
    if ((i > 0)); then
      read -r _ _ g0 _ _ _ <<<"$(ports 0)"
      export CLUSTER_JOIN="127.0.0.1:$g0"
    fi
    exec "$bin" --scheme http --host 127.0.0.1 --port "$rest" --read-timeout=600s --write-timeout=600s
  ) >"$DIR/node$i/weaviate.log" 2>&1 &
  echo $! >"$DIR/node$i/pid"
  echo "weaviate.sh: node$i pid $! http://127.0.0.1:$rest grpc 127.0.0.1:$grpc (log $DIR/node$i/weaviate.log)" >&2
}

wait_ready() {
  local i=$1 rest
  read -r rest _ <<<"$(ports "$i")"
  for _ in $(seq 1 240); do
    if curl -fsS "http://127.0.0.1:$rest/v1/.well-known/ready" >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$(cat "$DIR/node$i/pid")" 2>/dev/null; then
      echo "weaviate.sh: node$i exited; last log lines:" >&2; tail -20 "$DIR/node$i/weaviate.log" >&2; return 1
    fi
    sleep 0.5
  done
  echo "weaviate.sh: node$i not ready after 120 s" >&2
  return 1
}

stop_node() {
  local i=$1 pidf="$DIR/node$1/pid"
  [[ -f "$pidf" ]] || return 0
  local pid; pid="$(cat "$pidf")"
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidf"
}

count() {
  local n="${1:-1}"
  [[ "$n" == 1 || "$n" == 3 ]] || { echo "weaviate.sh: N must be 1 or 3" >&2; exit 2; }
  echo "$n"
}

cmd="${1:-}"
case "$cmd" in
  binary) binary ;;
  start)
    n="$(count "${2:-1}")"; bin="$(binary)"
    start_node 0 "$n" "$bin"
    if ((n > 1)); then # the others join node0's gossip port once, at start
      read -r _ _ g0 _ _ _ <<<"$(ports 0)"
      for _ in $(seq 1 240); do (echo >"/dev/tcp/127.0.0.1/$g0") 2>/dev/null && break; sleep 0.25; done
    fi
    for ((i = 1; i < n; i++)); do start_node "$i" "$n" "$bin"; done
    for ((i = 0; i < n; i++)); do wait_ready "$i" || { for ((j = 0; j < n; j++)); do stop_node "$j"; done; exit 1; }; done
    echo "$n" >"$DIR/nodes"
    echo "weaviate.sh: $n node(s) ready" >&2
    ;;
  stop)
    n="${2:-$(cat "$DIR/nodes" 2>/dev/null || echo 3)}"
    for ((i = 0; i < n; i++)); do stop_node "$i"; done
    ;;
  kill)
    i="${2:?node index}"; kill -9 "$(cat "$DIR/node$i/pid")"; rm -f "$DIR/node$i/pid"
    echo "weaviate.sh: node$i killed (SIGKILL)" >&2
    ;;
  restart)
    i="${2:?node index}"; n="$(cat "$DIR/nodes")"
    start_node "$i" "$n" "$(binary)"; wait_ready "$i"
    ;;
  status)
    n="${2:-$(cat "$DIR/nodes" 2>/dev/null || echo 1)}"
    for ((i = 0; i < n; i++)); do
      read -r rest _ <<<"$(ports "$i")"
      if curl -fsS "http://127.0.0.1:$rest/v1/.well-known/ready" >/dev/null 2>&1; then echo "node$i ready"; else echo "node$i down"; fi
    done
    ;;
  *) sed -n '2,29p' "$0" >&2; exit 2 ;;
esac
