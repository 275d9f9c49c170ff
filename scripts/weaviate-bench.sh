#!/usr/bin/env bash
# Issue 14 acceptance 4: throughput and latency of the embedded index vs one
# Weaviate node vs three Weaviate nodes (replication factor 2) behind two rcpd
# replicas, in rcp bench A/B runs (every operation goes to every target, so the
# ratios come from one run): ingest (index/add of 500) then sparse retrieve.
#
# Usage: DOCS=200000 DUR=120s bash scripts/weaviate-bench.sh [OUTDIR]
# Builds rcpd and rcp, starts the two clusters with scripts/weaviate.sh on
# separate port bases (REST 18180 / 18280, gRPC 51051 / 52051) and the four rcpd
# on 17741..17744; everything is stopped on exit. Figures: docs/rcpd.md.
# Between the phases it waits SETTLE seconds (default 120): after a bulk
# import Weaviate flushes and compacts its LSM segments for minutes, and a
# retrieve measured during that measures the compaction. REUSE=1 keeps OUTDIR's
# data from an earlier run and runs the retrieve phase only.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-${TMPDIR:-/tmp}/rcpgo-weaviate-bench}"
DOCS="${DOCS:-50000}" BATCH=500
mkdir -p "$OUT"
go build -o "$OUT/rcpd" ./cmd/rcpd
go build -o "$OUT/rcp" ./cmd/rcp
S=scripts/weaviate.sh
W1=(WEAVIATE_DIR="$OUT/wv1" WEAVIATE_PORT=18180 WEAVIATE_GRPC_PORT=51051 WEAVIATE_GOSSIP_PORT=17100 WEAVIATE_RAFT_PORT=18300)
W3=(WEAVIATE_DIR="$OUT/wv3" WEAVIATE_PORT=18280 WEAVIATE_GRPC_PORT=52051 WEAVIATE_GOSSIP_PORT=17200 WEAVIATE_RAFT_PORT=18400)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  env "${W1[@]}" bash $S stop 1 || true
  env "${W3[@]}" bash $S stop 3 || true
}
trap cleanup EXIT
[[ "${REUSE:-}" == 1 ]] || rm -rf "$OUT/wv1" "$OUT/wv3" "$OUT"/data-*
env "${W1[@]}" bash $S start 1
env "${W3[@]}" bash $S start 3
serve() { "$OUT/rcpd" serve --no-ui --log-level warn --dense none "$@" & pids+=($!); }
serve --http 127.0.0.1:17741 --data "$OUT/data-emb"
serve --http 127.0.0.1:17742 --data "$OUT/data-w1" --backend weaviate --weaviate-class Bench \
  --weaviate-url http://127.0.0.1:18180 --weaviate-grpc 127.0.0.1:51051
for i in 0 1; do
  serve --http 127.0.0.1:$((17743 + i)) --data "$OUT/data-w3-$i" --backend weaviate --weaviate-class Bench --weaviate-replicas 2 \
    --weaviate-url http://127.0.0.1:$((18280 + i)) --weaviate-grpc 127.0.0.1:$((52051 + i))
done
sleep 8
T=(--target embedded=http://127.0.0.1:17741/rcp --target weaviate-1node=http://127.0.0.1:17742/rcp
  --target weaviate-3node-rf2-2rcpd=http://127.0.0.1:17743/rcp,http://127.0.0.1:17744/rcp)
if [[ "${REUSE:-}" != 1 ]]; then
  echo "== ingest: $DOCS generated passages, index/add of $BATCH, 2 in flight"
  "$OUT/rcp" bench --quiet --workload index --batch $BATCH -n $((DOCS / BATCH)) --gen-docs "$DOCS" -c 2 --timeout 5m "${T[@]}" --json "$OUT/ingest.json"
fi
echo "== settling ${SETTLE:-120}s (Weaviate flushes and compacts after an import and on start)"
sleep "${SETTLE:-120}"
echo "== retrieve: sparse, k 10, generated queries, 8 in flight"
"$OUT/rcp" bench --quiet --workload retrieve --gen-docs "$DOCS" -c 8 -d "${DUR:-45s}" --warmup 8 "${T[@]}" --json "$OUT/retrieve.json"
