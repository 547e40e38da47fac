#!/usr/bin/env bash
# Folds what exploration reached (fuzz/run.sh's OUT/corpus/<target>) into the committed corpus
# fuzz/corpus/<target>, which every CI run replays under ASan + UBSan (CTest fuzz_corpus.<target>).
# libFuzzer's -merge=1 keeps the smallest set of inputs that reaches the same coverage; inputs
# whose coverage the seeds (fuzz/make-corpus.sh) already give are left out, so the corpus holds
# only what the seeds do not reach. Names are the SHA-1 of the content, as libFuzzer writes them.
#
# Usage: fuzz/update-corpus.sh [-b BUILD_DIR] [-o OUT] [TARGET...]
#   -b  build dir of the fuzz preset (default build/fuzz)
#   -o  fuzz/run.sh's work dir holding corpus/<target> (default /tmp/scalefit-fuzz)
#   TARGET: nccl_tests osu jsonl config_yaml fit_file size (default: all)
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
build="$src/build/fuzz" out=/tmp/scalefit-fuzz
while getopts "b:o:" opt; do
  case $opt in
    b) build=$OPTARG ;; o) out=$OPTARG ;;
    *) sed -n '2,11p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
targets=("$@")
((${#targets[@]})) || targets=(nccl_tests osu jsonl config_yaml fit_file size)

work=$(mktemp -d /tmp/scalefit-corpus.XXXXXX)
trap 'rm -rf "$work"' EXIT
bash "$src/fuzz/make-corpus.sh" "$work/seeds" >/dev/null
for t in "${targets[@]}"; do
  bin="$build/bin/fuzz_$t" committed="$src/fuzz/corpus/$t"
  [ -x "$bin" ] || { echo "update-corpus: no $bin (cmake --preset fuzz && cmake --build --preset fuzz)" >&2; exit 1; }
  # merged/ starts as the seeds: -merge=1 then adds only inputs that bring coverage beyond them.
  mkdir -p "$work/$t" "$committed" "$out/corpus/$t"
  cp "$work/seeds/$t"/* "$work/$t/"
  before=$(ls "$work/$t" | wc -l)
  "$bin" -merge=1 -max_len=262144 -timeout=10 -rss_limit_mb=4096 "$work/$t" "$committed" \
    "$out/corpus/$t" >"$work/$t.log" 2>&1 || { tail -n 20 "$work/$t.log" >&2; exit 1; }
  rm -f "$committed"/*
  for f in "$work/$t"/*; do
    [ -e "$work/seeds/$t/$(basename "$f")" ] || cp "$f" "$committed/"
  done
  echo "update-corpus: $t: $(ls "$committed" | wc -l) inputs beyond $before seeds," \
       "$(du -sh "$committed" | cut -f1)"
done
