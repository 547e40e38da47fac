#!/usr/bin/env bash
# Regenerates the README's measured figures ("What to expect") on this machine. Prints the machine
# (CPU model, cores, load, OS, compiler, MPI), then each command before running it, then the
# figure with its range over runs (min..max, and the median) — never a single favourable run.
#
# Usage: scripts/figures.sh [-b BUILD_DIR] [-r RUNS] [--main-job]
#   -b  a Release build with benchmarks and tests (default build; scripts/setup.sh --all makes it)
#   -r  runs of each timed figure (default 5)
#   --main-job  also time scripts/main-job.sh (about 1-2 minutes on 2 cores; writes results/local/)
# Needs: scalefit-bench, bm_fitting, bm_estimator and the test suite built in BUILD_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build runs=5 main_job=false
while (($#)); do
  case "$1" in
    -b) build=$2; shift ;;
    -r) runs=$2; shift ;;
    --main-job) main_job=true ;;
    *) sed -n '2,10p' "$0" >&2; exit 2 ;;
  esac
  shift
done
bin=$build/bin
for b in scalefit-bench bm_fitting bm_estimator; do
  [ -x "$bin/$b" ] || { echo "figures: no $bin/$b (build with benchmarks: bash scripts/setup.sh --all)" >&2; exit 2; }
done
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# range: min..max (median) of the numbers on stdin, with %.PREC f.
range() {
  sort -g | awk -v p="${1:-2}" '{v[NR]=$1} END {
    if (NR == 0) { print "n/a"; exit }
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.*f .. %.*f (median %.*f, %d runs)\n", p, v[1], p, v[NR], p, m, NR }'
}
say() { printf '\n$ %s\n' "$*"; }

echo "== machine"
echo "date:     $(date -u +%Y-%m-%dT%H:%M:%SZ)   commit: $(git rev-parse --short HEAD 2>/dev/null || echo n/a)"
echo "cpu:      $(lscpu | sed -n 's/^Model name: *//p' | head -n 1)"
echo "cores:    $(nproc) online ($(lscpu | sed -n 's/^Thread(s) per core: *//p') thread(s) per core)"
echo "load:     $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min; other work on the machine skews timings)"
echo "os:       $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)"
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
echo "compiler: $("${cxx:-c++}" --version | head -n 1)"
echo "build:    $build ($(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null))"
echo "mpi:      $(mpirun --version 2>&1 | head -n 1)"

echo
echo "== harness overhead: scalefit-bench vs a bare MPI_Allreduce loop, 8 B, medians interleaved"
cmd=(mpirun -np 2 --oversubscribe "$bin/scalefit-bench" comm --backend mpi --ops allreduce -b 8 -e 8 --baseline)
say "${cmd[*]}   # x $runs"
pct=() bare=()
for ((i = 1; i <= runs; ++i)); do
  line=$("${cmd[@]}" 2>/dev/null | grep '^# baseline' || true)
  echo "run $i: ${line:-no baseline line}"
  [ -n "$line" ] || continue
  pct+=("$(sed -n 's/.*overhead [^(]*(\([-+0-9.]*\)%).*/\1/p' <<<"$line")")
  bare+=("$(sed -n 's/.*bare MPI_Allreduce loop median \([0-9.]*\) us.*/\1/p' <<<"$line")")
done
echo "overhead [%]:          $(printf '%s\n' "${pct[@]}" | range 2)"
echo "bare median [us]:      $(printf '%s\n' "${bare[@]}" | range 3)"

# bench_times BINARY FILTER: "wall unit cpu unit" per iteration of each repetition (no
# aggregates). Wall time counts waiting for the cores; CPU time is what the code itself used.
bench_times() {
  "$1" --benchmark_filter="$2" --benchmark_repetitions="$runs" 2>/dev/null |
    awk -v f="$2" '$1 ~ f && $1 !~ /_(mean|median|stddev|cv)$/ && $3 ~ /^(ns|us|ms|s)$/ {print $2, $3, $4, $5}'
}
# report_times NAME PRECISION: the ranges of wall and CPU time from bench_times on stdin.
report_times() {
  local t
  t=$(cat)
  echo "$t" | awk '{print "rep: wall " $1 " " $2 ", cpu " $3 " " $4}'
  echo "$1, wall [$(echo "$t" | awk 'NR==1{print $2}')]: $(echo "$t" | awk '{print $1}' | range "$2")"
  echo "$1, cpu  [$(echo "$t" | awk 'NR==1{print $4}')]: $(echo "$t" | awk '{print $3}' | range "$2")"
}

echo
echo "== one curve fit: 30 points, every model, outliers, leave-one-out"
say "$bin/bm_fitting --benchmark_filter='BM_FitCurveAllModelsLoo\$' --benchmark_repetitions=$runs"
bench_times "$bin/bm_fitting" 'BM_FitCurveAllModelsLoo$' | report_times "time per curve" 3

echo
echo "== estimator: one layout evaluated (megatron-1t on dgx-a100-80gb, every valid layout in turn)"
say "$bin/bm_estimator --benchmark_filter='BM_EvaluateLayout\$' --benchmark_repetitions=$runs"
bench_times "$bin/bm_estimator" 'BM_EvaluateLayout$' | report_times "time per layout" 1

echo
echo "== fit quality on the real nccl-tests logs in tests/data/nccl-tests (deterministic)"
say "ctest --test-dir $build -R 'RealLogs.Fourteen' -V"
q=$(ctest --test-dir "$build" -R 'RealLogs.Fourteen' -V 2>&1 || true)
grep -E 'mean MAPE|tests passed|tests failed' <<<"$q" | sed 's/^[0-9]*: //'

if $main_job; then
  echo
  echo "== main job (measure 7 ops x 3 group shapes, fit)"
  say "rm -rf results/local && BUILD_DIR=$build bash scripts/main-job.sh"
  rm -rf results/local
  start=$(date +%s)
  BUILD_DIR=$build bash scripts/main-job.sh | tail -n 3
  echo "main job wall time: $(($(date +%s) - start)) s"
fi
