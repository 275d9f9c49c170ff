#!/usr/bin/env bash
# Issue 34's newcomer trial, scripted: each finding walked through with the
# installed rcp and rcpd (called by scripts/newcomer.sh with its work
# directory, HOME and PATH set; prints the time of each step).
set -euo pipefail
work=$1
t0=$SECONDS
step() { echo "newcomer-everyday: $1 ($((SECONDS - t0)) s)"; }
fail() { echo "newcomer-everyday: FAIL: $*" >&2; exit 1; }
data=$work/everyday-data
srv=(-- rcpd serve --stdio --data "$data" --dense none)
run() { # run CMD…: sets rc, out (stdout) and err (stderr)
	rc=0
	"$@" >"$work/out" 2>"$work/err" || rc=$?
	out=$(cat "$work/out")
	err=$(cat "$work/err")
}
words="index query retrieval ranking passage document engine token vector sparse dense fusion score corpus field filter chunk page"

# 1. A 20 MB folder: 200 text files of 100 KB.
big=$work/big
mkdir -p "$big"
para=""
for i in $(seq 1 60); do para+="$words $i. "; done
for i in $(seq 1 13); do printf '%s\n' "$para"; done >"$work/base.txt" # ≈ 105 KB
for i in $(seq -w 1 200); do { echo "marker$i"; cat "$work/base.txt"; } >"$big/f$i.txt"; done
run rcp index add "$big" "${srv[@]}"
echo "$out"
[[ $rc == 0 ]] || fail "20 MB folder: exit $rc: $out $err"
grep -q "indexed 200 files: 200 new" <<<"$out" || fail "20 MB folder: $out"
step "1. a $(du -sh "$big" | cut -f1) folder"

# 2. A 17 MB file beside four small ones: named, the rest indexed, exit 1.
mixed=$work/mixed
mkdir -p "$mixed"
for i in 1 2 3 4; do echo "small note $i about tomatoes" >"$mixed/small$i.txt"; done
{ cat "$big"/f*.txt || true; } | head -c $((17 << 20)) >"$mixed/huge.txt"
run rcp index add "$mixed" "${srv[@]}"
echo "$out"
[[ $rc == 1 ]] || fail "17 MB file: exit $rc, want 1"
grep -q "indexed 4 files: 4 new" <<<"$out" || fail "17 MB file: the small files: $out"
grep -q "not indexed: $mixed/huge.txt: 17.0 MiB of text is more than the server takes in one request" <<<"$out" || fail "17 MB file not named: $out"
step "2. a 17 MB file beside small ones"

# 3. A held data directory: refused, naming the holder and the choices.
port=$((20000 + RANDOM % 20000))
rcpd serve --http 127.0.0.1:$port --data "$data" --dense none --no-ui --log-level warn &
holder=$!
trap 'kill $holder 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do rcp ping -n 1 --http http://127.0.0.1:$port/rcp >/dev/null 2>&1 && break; sleep 0.1; done
run rcpd serve --stdio --data "$data" </dev/null
echo "$err"
[[ $rc == 1 ]] || fail "a second rcpd on a held directory: exit $rc"
grep -q "is in use by rcpd serve (PID $holder, http://127.0.0.1:$port/rcp)" <<<"$err" || fail "the holder is not named: $err"
grep -q -- "--read-only" <<<"$err" && grep -q "rcpd mcp --connect" <<<"$err" || fail "the choices are not given: $err"
run rcp index add "$mixed/small1.txt" -- rcpd serve --stdio --data "$data" --read-only
grep -q "read-only snapshot of $data, which rcpd serve (PID $holder" <<<"$err" || fail "a snapshot's refusal does not say why: $err"
run rcp index status --http http://127.0.0.1:$port/rcp
echo "$out"
grep -q "documents: 204" <<<"$out" || fail "index status: $out"
kill $holder
wait $holder 2>/dev/null || true
trap - EXIT
step "3. a held data directory"

# 4. A Latin-1 file, found by "café crème".
mkdir -p "$work/latin1"
printf 'Un caf\xe9 cr\xe8me et une cr\xeape, servis pr\xe8s de la fen\xeatre.\n' >"$work/latin1/menu.txt"
run rcp index add "$work/latin1" "${srv[@]}"
echo "$out"
grep -q "decoded 1 file that was not UTF-8" <<<"$out" || fail "the charset is not reported: $out"
run rcp query "café crème" --k 1 "${srv[@]}"
echo "$out"
grep -q "Un \*\*café\*\* \*\*crème\*\*" <<<"$out" || fail "café crème does not find the Latin-1 file: $out"
step "4. a Latin-1 file"

# 5. Extension-less text named explicitly is indexed; a named binary file is refused.
printf 'Permission is hereby granted, free of charge, to any person.\n' >"$work/LICENSE"
head -c 4096 /dev/urandom | tr '\000' '\001' >"$work/random.txt"
run rcp index add "$work/LICENSE" "${srv[@]}"
[[ $rc == 0 ]] && grep -q "indexed 1 file: 1 new" <<<"$out" || fail "LICENSE: exit $rc: $out $err"
run rcp index add "$work/random.txt" "${srv[@]}"
echo "$out"
[[ $rc == 1 ]] && grep -q "not indexed: $work/random.txt: binary content, not text" <<<"$out" || fail "a named binary file: exit $rc: $out"
step "5. LICENSE and a binary file named explicitly"

# 6. Switching to chunks after a plain add updates the files.
run rcp index add "$mixed" --chunk "${srv[@]}"
echo "$out"
grep -q "indexed 4 files: 0 new, 4 updated, 0 unchanged" <<<"$out" || fail "--chunk after a plain add: $out"
step "6. --chunk after a plain add"

# 7. Unit page: HTML has no pages.
printf '<html><head><title>Memory</title></head><body><h1>Memory model</h1><p>Goroutines and channels synchronise memory.</p></body></html>' >"$work/go_mem.html"
run rcp index add "$work/go_mem.html" "${srv[@]}"
run rcp query "goroutines memory" --unit page "${srv[@]}"
echo "$out"
grep -q "^no hits" <<<"$out" && grep -q "only paginated formats such as PDF have pages" <<<"$out" || fail "unit page returned an HTML page: $out"
step "7. unit page"

# 8. --json everywhere; Ctrl-C says how far it got.
for c in "info" "ping -n 1" "index status"; do
	# shellcheck disable=SC2086
	run rcp $c --json "${srv[@]}"
	python3 -c 'import json,sys; json.load(sys.stdin)' <<<"$out" || fail "rcp $c --json: $out $err"
done
rcp index add "$big" --chunk --batch 1 "${srv[@]}" >"$work/out" 2>&1 &
adder=$!
# Interrupt while it sends: its server is spawned once the files are read.
for _ in $(seq 1 600); do pgrep -P $adder >/dev/null && break; sleep 0.1; done
sleep 1
kill -INT $adder 2>/dev/null || true # on a quiet machine the add may be done already
rc=0
wait $adder || rc=$?
grep -v "^indexing" "$work/out" || true
if [[ $rc == 130 ]]; then
	grep -q "of 200 documents sent; run it again to resume\|interrupted before anything was sent; run it again" "$work/out" ||
		fail "Ctrl-C: $(cat "$work/out")"
else
	[[ $rc == 0 ]] || fail "Ctrl-C: exit $rc"
	echo "(the add finished before the interrupt)"
fi
step "8. --json, Ctrl-C"

# 9. The README's integration snippets: the registry example (papers over stdio).
awk '/<!-- rcp-registry -->/{r=1; next} r && /^```json/{b=1; next} b && /^```/{exit} b' README.md >"$work/rcp.json"
export NOTES_TOKEN=unused
run rcp index add "$mixed/small2.txt" --registry "$work/rcp.json" --engine papers
[[ $rc == 0 ]] || fail "the README registry's papers engine: $out $err"
run rcp query tomatoes --registry "$work/rcp.json" --engine papers
grep -q "small note 2" <<<"$out" || fail "query through the registry: $out $err"
mport=$((20000 + RANDOM % 20000))
rcpd mcp --http 127.0.0.1:$mport --log-level warn &
mcp=$!
for _ in $(seq 1 300); do curl -s -o /dev/null http://127.0.0.1:$mport/ && break; sleep 0.1; done
hint=$(curl -s http://127.0.0.1:$mport/ || true)
kill $mcp
wait $mcp 2>/dev/null || true
grep -q "Its endpoint is /mcp" <<<"$hint" || fail "GET / on the MCP face: $hint"
step "9. the registry example and the MCP endpoint (the client configurations: go test ./cmd/rcpd -run TestReadmeMCPConfigs)"

# 10. Polish: hints, suggestions, plurals, one empty-result wording.
tport=$((20000 + RANDOM % 20000))
rcpd serve --http 127.0.0.1:$tport --token s3cret --data "$work/tokened" --dense none --no-ui --log-level warn &
tok=$!
for _ in $(seq 1 600); do rcp ping -n 1 --http http://127.0.0.1:$tport/rcp --token s3cret >/dev/null 2>&1 && break; sleep 0.1; done
run rcp ping -n 1 --http http://127.0.0.1:$tport/rcp
kill $tok
wait $tok 2>/dev/null || true
grep -q "hint: .*--token TOKEN or set RCP_TOKEN" <<<"$err" || fail "-32012 without a hint: $err"
run rcp query "fusion" --filter yaer=2020 -- rcpd serve --stdio --demo --data "$work/demo"
grep -q 'did you mean "year"?' <<<"$err" || fail "no suggestion for yaer: $err"
run rcp query "zzzyzzx" "${srv[@]}"
[[ $out == "no hits" ]] || fail "empty result: $out"
! grep -q "skipped 1 files\|indexed 1 files\|packed 1 hits" "$work/out" "$work/err" || fail "plural: $out"
step "10. hints, suggestions, one empty-result wording"
