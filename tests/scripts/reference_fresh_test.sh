#!/usr/bin/env bash
# The committed reference results (results/reference/<system>/) are what today's code makes of
# their raw logs: scripts/make-reference.sh regenerates a copy in a temp dir (no reports), and
# every fit table (fit.txt), fit file (fit.yaml, but its `created:` time) and example estimate,
# search and compare (*.json) must equal the committed one. A change to ingest, fit or the
# estimator that moves them fails here until `scripts/make-reference.sh` is run and its output
# committed (with the PROVENANCE.md figures it changes).
# Usage: reference_fresh_test.sh SOURCE_DIR SCALEFIT
set -u
src=$1 sf=$2
tmp=$(mktemp -d /tmp/scalefit_reference_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "reference_fresh_test: $*" >&2; exit 1; }

ref=$src/results/reference
[ -d "$ref" ] || fail "no $ref"
systems=()
for d in "$ref"/*/; do
  sys=$(basename "$d")
  [ -d "$d/raw" ] || continue
  systems+=("$sys")
  mkdir -p "$tmp/ref/$sys"
  cp -r "$d/raw" "$tmp/ref/$sys/raw"
done
((${#systems[@]})) || fail "no reference system with raw/ under $ref"
(cd "$src" && SCALEFIT=$sf REF_DIR=$tmp/ref NO_REPORT=1 bash scripts/make-reference.sh \
  "${systems[@]}" >"$tmp/log" 2>&1) || { cat "$tmp/log" >&2; fail "make-reference failed"; }

# The outputs name their inputs by path: the copy's paths read as the committed ones. Numbers
# agree to 1e-6 relative (libm may differ in the last digit between CPUs); text exactly.
norm() { sed -e "s|$tmp/ref|results/reference|g" -e '/^created: /d' "$1"; }
same() {
  python3 - "$1" "$2" <<'PY'
import re, sys
num = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
a, b = (open(f).read().split("\n") for f in sys.argv[1:3])
if len(a) != len(b):
    sys.exit(1)
for x, y in zip(a, b):
    if num.sub("#", x) != num.sub("#", y):
        sys.exit(1)
    for u, v in zip(num.findall(x), num.findall(y)):
        fu, fv = float(u), float(v)
        if abs(fu - fv) > 1e-6 * max(abs(fu), abs(fv), 1e-300):
            sys.exit(1)
PY
}
n=0 bad=0
for sys in "${systems[@]}"; do
  for f in "$tmp/ref/$sys"/fit.txt "$tmp/ref/$sys"/fit.yaml "$tmp/ref/$sys"/*.json; do
    [ -e "$f" ] || continue
    name=${f#"$tmp/ref/"}
    n=$((n + 1))
    if [ ! -e "$ref/$name" ]; then
      echo "reference_fresh_test: $name is made but not committed" >&2; bad=$((bad + 1)); continue
    fi
    norm "$f" >"$tmp/made"
    norm "$ref/$name" >"$tmp/committed"
    if ! same "$tmp/made" "$tmp/committed"; then
      echo "reference_fresh_test: results/reference/$name differs from what today's code makes:" >&2
      diff "$tmp/committed" "$tmp/made" | head -8 >&2
      bad=$((bad + 1))
    fi
  done
done
((n > 0)) || fail "make-reference wrote nothing to compare"
((bad == 0)) || fail "$bad of $n reference files are stale: run scripts/make-reference.sh and commit"
echo "reference_fresh_test: $n files of ${#systems[@]} systems equal what today's code makes"
