#!/usr/bin/env bash
# scripts/graph-ab.sh DATASET_DIR — the cost of the graph and summary tree
# (issue 13, acceptance 3) on a BEIR dataset: two rcpd, both --dense lsa, one
# with --graph (knowledge graph + RAPTOR tree), ingested at the same time so
# they share the machine's load. Prints ingest time, catch-up time, disk,
# RSS (now and peak) and, in one rcp bench A/B run, plain sparse retrieve
# latency on the dataset's queries.
set -euo pipefail
ds=${1:?usage: scripts/graph-ab.sh DATASET_DIR (BEIR: corpus.jsonl, queries.jsonl, qrels/)}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
go build -o "$work/rcpd" ./cmd/rcpd
go build -o "$work/rcp" ./cmd/rcp
off=http://127.0.0.1:7811/rcp on=http://127.0.0.1:7812/rcp
"$work/rcpd" serve --data "$work/off" --dense lsa --http 127.0.0.1:7811 --log-level warn & pids+=($!); poff=$!
"$work/rcpd" serve --data "$work/on" --dense lsa --graph --http 127.0.0.1:7812 --log-level warn & pids+=($!); pon=$!
for u in $off $on; do until "$work/rcp" ping --http "$u" >/dev/null 2>&1; do sleep 0.2; done; done

since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
ingest() { # target → seconds to ingest the corpus (rcp eval -ingest, one sparse eval)
  local s; s=$(date +%s.%N)
  "$work/rcp" eval -target "$1" -dataset "$ds" -ingest -quiet -metrics ndcg@10 -mode 'sparse={"mode":"sparse"}' >/dev/null
  since "$s"
}
start=$(date +%s.%N)
ingest $off > "$work/t.off" & a=$!
ingest $on > "$work/t.on" & b=$!
wait $a $b
# Catch-up: the graph server is done when its tree is served and its
# communities (recomputed once extraction has been quiet for 3 s) stop
# changing between two looks 5 s apart.
until "$work/rcp" info --http $on 2>/dev/null | grep -q tree-node; do sleep 1; done
prev="" cur=""
while :; do
  cur=$("$work/rcp" graph communities --level 0 --k 200 --json --http $on 2>/dev/null | sha1sum)
  [ -n "$prev" ] && [ "$cur" = "$prev" ] && break
  prev=$cur; sleep 5
done
caught=$(since "$start")
rss() { awk '/^VmRSS|^VmHWM/ {printf "%s %.0f MB  ", $1, $2/1024}' "/proc/$1/status"; }
printf 'ingest until acknowledged: off %.1f s, on %.1f s; graph+tree caught up %.1f s after the start\n' "$(cat "$work/t.off")" "$(cat "$work/t.on")" "$caught"
printf 'disk: off %s bytes, on %s bytes\n' "$(du -sb "$work/off" | cut -f1)" "$(du -sb "$work/on" | cut -f1)"
printf 'RSS off: %s\nRSS on:  %s\n' "$(rss $poff)" "$(rss $pon)"
"$work/rcp" bench -workload retrieve -queries "$ds/queries.jsonl" -opts '{"mode":"sparse"}' -c 1 -d 20s -warmup 50 \
  -target off=$off -target on=$on
