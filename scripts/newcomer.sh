#!/usr/bin/env bash
# The newcomer run of issue 16, scripted: a fresh HOME, XDG directories and
# build cache (the module cache is shared, so nothing is downloaded), the
# README quick start run verbatim, then the everyday notes workflow: index a
# folder, edit a file, re-add it, the query shows only the new text, list,
# delete by source. Called from .ci/run; prints the time of each phase.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
modcache=$(go env GOMODCACHE) # before HOME changes: the default lives under it
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home GOMODCACHE=$modcache GOCACHE=$work/gocache GOPATH=$work/gopath \
	XDG_DATA_HOME=$work/xdg/data XDG_CONFIG_HOME=$work/xdg/config XDG_CACHE_HOME=$work/xdg/cache XDG_STATE_HOME=$work/xdg/state
mkdir -p "$HOME" "$GOCACHE"
unset RCPD_DATA RCPD_CONFIG RCP_URL RCP_TOKEN
t0=$SECONDS
phase() { echo "newcomer: $1 ($((SECONDS - t0)) s)"; }
fail() { echo "newcomer: FAIL: $*" >&2; exit 1; }

# 1. The README quick start, verbatim (the first command of its first block).
quick=$(awk '/^## Quick start/{q=1} q && /^```sh/{getline; print; exit}' README.md)
[[ $quick == "go run ./cmd/rcp query "* ]] || fail "quick start command not found in README.md: $quick"
echo "\$ $quick"
out=$(eval "$quick" 2>"$work/quick.err") || { cat "$work/quick.err" >&2; fail "the quick start failed"; }
echo "$out" | head -5
grep -qi "fusion" <<<"$out" || fail "quick start answered no fusion passage"
! grep -q "level=INFO" "$work/quick.err" || fail "the spawned server's INFO lines precede the answer: $(cat "$work/quick.err")"
phase "quick start with an empty build cache"

# 2. The binaries a newcomer installs next (the build cache is warm now).
go build -o "$work/bin/" ./cmd/rcp ./cmd/rcpd
export PATH=$work/bin:$PATH
phase "go build ./cmd/rcp ./cmd/rcpd"

# 3. Their own notes, in the default data directory.
srv=(-- rcpd serve --stdio --log-level warn)
notes=$HOME/notes
mkdir -p "$notes"
printf '# Plan\n\nWe ship the release on Monday.\n' >"$notes/plan.md"
printf 'Ideas about a garden with tomatoes.\n' >"$notes/ideas.txt"
out=$(rcp index add "$notes" "${srv[@]}")
echo "$out"
grep -q "2 new, 0 updated, 0 unchanged" <<<"$out" || fail "first add"
printf '# Plan\n\nWe ship the release on Friday.\n' >"$notes/plan.md"
out=$(rcp index add "$notes" "${srv[@]}")
echo "$out"
grep -q "0 new, 1 updated, 1 unchanged" <<<"$out" || fail "re-add after the edit"
out=$(rcp query "when do we ship the release" "${srv[@]}")
echo "$out"
grep -q "Friday" <<<"$out" || fail "the query does not show the new text"
! grep -q "Monday" <<<"$out" || fail "the query still shows the old text"
out=$(rcp index list "${srv[@]}")
echo "$out"
[[ $(grep -c "file://" <<<"$out") == 2 ]] || fail "index list: want the two notes"
! grep -qi "prompt injection" <<<"$out" || fail "demo passages leaked into the default data directory"
out=$(rcp index delete --source "$notes/plan.md" "${srv[@]}")
echo "$out"
grep -q "deleted 1 of 1" <<<"$out" || fail "delete --source"
out=$(rcp index list "${srv[@]}")
[[ $(grep -c "file://" <<<"$out") == 1 ]] || fail "index list after delete: $out"
phase "notes workflow"

# 4. Issue 34, "everyday use, round two": every finding, as a newcomer meets it.
bash scripts/newcomer-everyday.sh "$work"
phase "everyday use (issue 34)"
echo "newcomer: ok"
