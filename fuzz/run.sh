#!/usr/bin/env bash
# Runs scalefit's libFuzzer targets (fuzz/README.md) for a fixed time each and reports, per target,
# the executions done and whether it found a crash. Each target starts from the seeds
# (fuzz/make-corpus.sh) and what OUT/corpus/<target>/ already holds. Inputs that crash are saved
# under OUT/artifacts/ (crash-*, leak-*, timeout-*, oom-*); new coverage under OUT/corpus/<target>/.
#
# Usage: fuzz/run.sh [-t SECONDS] [-j PARALLEL] [-s SEED] [-r RUNS] [-b BUILD_DIR] [-o OUT] [TARGET...]
#   -t  seconds per target (default 30)          -j  targets run at once (default 2)
#   -s  libFuzzer seed (default: random). A seed does not make a run reproducible: two runs of the
#       same binary with the same seed diverge after about a thousand executions.
#   -r  executions per target, N or TARGET=N,TARGET=N,... (default: until -t)
#   -b  build dir of the fuzz preset (default build/preset-fuzz)
#   -o  work dir for corpora and artifacts (default /tmp/scalefit-fuzz)
#   TARGET: nccl_tests osu jsonl config_yaml fit_file size published_runs kernels report (default: all)
# Environment: NICE (default 19), EXTRA (more libFuzzer flags), KEEP_GOING=1 (survey: fork mode,
# keep fuzzing after a crash and save every crashing input; always exits 0). Exit status: 1 if
# any target crashed (or failed to start), 0 otherwise.
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
seconds=30 parallel=2 seed="" runs="" build="$src/build/preset-fuzz" out=/tmp/scalefit-fuzz
while getopts "t:j:s:r:b:o:" opt; do
  case $opt in
    t) seconds=$OPTARG ;; j) parallel=$OPTARG ;; s) seed=$OPTARG ;; r) runs=$OPTARG ;; b) build=$OPTARG ;; o) out=$OPTARG ;;
    *) sed -n '2,19p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
targets=("$@")
((${#targets[@]})) || targets=(nccl_tests osu jsonl config_yaml fit_file size published_runs kernels report)

mkdir -p "$out/artifacts" "$out/logs"
[ -d "$out/seeds" ] || bash "$src/fuzz/make-corpus.sh" "$out/seeds" >/dev/null
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# One target: -max_len reaches the 200 KB long-line seeds; a 10 s input is reported as a timeout.
# runs_of TARGET: the -r count for TARGET ("" when none).
runs_of() {
  local spec
  [[ $runs =~ ^[0-9]+$ ]] && { echo "$runs"; return; }
  IFS=, read -ra spec <<<"$runs"
  for kv in "${spec[@]}"; do [ "${kv%%=*}" = "$1" ] && echo "${kv#*=}"; done
  return 0
}

run_one() {
  local t=$1 bin="$build/bin/fuzz_$1" n
  n=$(runs_of "$t")
  [ -x "$bin" ] || { echo "fuzz: $t: no $bin (cmake --preset fuzz && cmake --build --preset fuzz)"; return 1; }
  mkdir -p "$out/corpus/$t"
  local rc=0
  # New inputs go to the first directory; the seeds are read only.
  nice -n "${NICE:-19}" "$bin" "$out/corpus/$t" "$out/seeds/$t" -max_len=262144 -timeout=10 \
    -rss_limit_mb=4096 -max_total_time="$seconds" -print_final_stats=1 ${seed:+-seed=$seed} ${n:+-runs=$n} \
    -artifact_prefix="$out/artifacts/${t}-" ${KEEP_GOING:+-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1} \
    ${EXTRA:-} >"$out/logs/$t.log" 2>&1 || rc=$?
  local execs
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/logs/$t.log" | tail -n 1)
  if [ -n "${KEEP_GOING:-}" ]; then  # fork mode: the last status line holds execs and crashes
    echo "fuzz: $t (keep going): $(grep -E '^#[0-9]+: ' "$out/logs/$t.log" | tail -n 1 | cut -c1-200);" \
         "artifacts: $(ls "$out/artifacts" | grep -c "^$t-" || true)"
    return 0
  fi
  if [ "$rc" -eq 0 ]; then
    echo "fuzz: $t: ok, ${execs:-?} executions${n:+ of $n} (at most ${seconds} s)${seed:+, seed $seed}, corpus $(ls "$out/corpus/$t" | wc -l) new inputs"
  else
    echo "fuzz: $t: FAILED (exit $rc) after ${execs:-?} executions; log $out/logs/$t.log:"
    grep -E "ERROR|SUMMARY|exception|Test unit written|^    #[0-9] " "$out/logs/$t.log" | head -n 25 |
      cut -c1-300
    return 1
  fi
}

failed=0
pids=() names=()
for t in "${targets[@]}"; do
  run_one "$t" & pids+=($!) names+=("$t")
  if ((${#pids[@]} >= parallel)); then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}") names=("${names[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
exit $failed
