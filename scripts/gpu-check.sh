#!/usr/bin/env bash
# gpu-check.sh: what to run on a new GPU box. Builds scalefit with CUDA (or uses prebuilt
# binaries), runs the `gpu` tests (nccl -c sweeps of every op, dtype and placement, with and
# without -G; cuBLAS and fused attention with -c), then a short comm sweep next to nccl-tests
# (when all_reduce_perf is on PATH; scalefit in its --nccl-tests mode, samples of nccl-tests' 20
# operations, and nccl-tests with -n 20 -w 1 stated) and kernels runs (GPT-2.7B fused and unfused,
# Llama 3 8B with GQA and SwiGLU, Mixtral 8x7B at EP 4 balanced and imbalanced: the grouped
# GEMMs; the bf16 sweep), each with -c, sampling the GPU's clocks and power meanwhile
# (smi_clocks.csv), and prints side-by-side tables:
#   size | scalefit time(us) algbw busbw | nccl-tests time(us) algbw busbw | time ratio
# (out-of-place columns of both tools; ratio = scalefit time / nccl-tests time, 1.00 = equal).
#
# Then, unless --no-suite, the CPU suite's test binaries that launch scalefit-bench or load the
# NCCL profiler (bench, kernels, cli), run with the GPU visible.
# Usage: scripts/gpu-check.sh [--dry-run] [--no-build] [--no-suite] [--max-bytes SIZE] [--ops LIST]
#        scripts/gpu-check.sh --table SCALEFIT_LOG NCCL_TESTS_LOG   (only the side-by-side table)
# From a GPU bundle (../shared/tools/gpu-bundle.sh: .gpu/ beside scripts/, with bin/, root/ (a
#   relocatable OpenMPI: mpirun.openmpi, no mpirun), env.sh) it needs no argument: it sources
#   .gpu/env.sh, takes the binaries from .gpu/bin, never builds, and launches ranks with the
#   bundle's mpirun.openmpi.
# --dry-run: runs nothing (no GPU needed); checks every binary, shared library (ldd), path and
#   the launcher the run would use, prints them, and exits 2 naming what is missing (0: ready).
# Environment: BIN_DIR (prebuilt binaries; implies --no-build; default .gpu/bin in a bundle);
#   BUILD_DIR (default build-gpu); MPIRUN (the launcher; default: in a bundle
#   .gpu/root/usr/bin/mpirun.openmpi, else mpirun, else mpirun.openmpi from PATH); OUT_DIR (logs,
#   default gpu-check-<date>). Exported for test_gpu (tests/support/paths.hpp):
#   SCALEFIT_BIN_DIR, SCALEFIT_SOURCE_DIR, SCALEFIT_TEST_DATA_DIR, SCALEFIT_MPIEXEC (the
#   launcher: never the path compiled into the tests on the build machine).
# Exit codes: 0 all passed (--dry-run: ready); 1 a test or a -c check failed; 2 bad usage, build
#   failure or (--dry-run) something missing; 77 no GPU visible (nothing run; automake's "skipped").
set -uo pipefail
cd "$(dirname "$0")/.."

# Prints the side-by-side table of two nccl-tests-format logs (scalefit-bench comm prints the
# same columns): rows joined on size, out-of-place time/algbw/busbw (columns 6-8).
side_by_side() {
  awk '
    function row(line, f) { return split(line, f) >= 13 && f[1] ~ /^[0-9]+$/ && f[6] ~ /^[0-9.e+]+$/ }
    FNR == 1 { file++ }
    { if (!row($0, f)) next
      if (file == 1) { if (!(f[1] in st)) { order[++n] = f[1]; st[f[1]] = f[6]; sa[f[1]] = f[7]; sb[f[1]] = f[8] } }
      else if (!(f[1] in nt)) { nt[f[1]] = f[6]; na[f[1]] = f[7]; nb[f[1]] = f[8] } }
    END {
      printf "%12s  %10s %9s %9s  %10s %9s %9s  %6s\n", "size(B)", "sf time", "sf algbw", "sf busbw",
             "nt time", "nt algbw", "nt busbw", "ratio"
      printf "%12s  %10s %9s %9s  %10s %9s %9s  %6s\n", "", "(us)", "(GB/s)", "(GB/s)", "(us)",
             "(GB/s)", "(GB/s)", "sf/nt"
      for (i = 1; i <= n; i++) { s = order[i]; if (!(s in nt)) continue
        printf "%12d  %10.2f %9.2f %9.2f  %10.2f %9.2f %9.2f  %6.2f\n", s, st[s], sa[s], sb[s],
               nt[s], na[s], nb[s], (nt[s] > 0 ? st[s] / nt[s] : 0); rows++ }
      if (!rows) { print "gpu-check: no common sizes in the two logs" > "/dev/stderr"; exit 1 }
    }' "$1" "$2"
}

build=true
suite=true
dry_run=false
max_bytes=1G
ops=allreduce,allgather,reducescatter,broadcast,reduce,alltoall,sendrecv
while (($#)); do
  case "$1" in
    --table)
      [ $# -eq 3 ] || { echo "gpu-check: --table needs SCALEFIT_LOG NCCL_TESTS_LOG" >&2; exit 2; }
      for f in "$2" "$3"; do [ -r "$f" ] || { echo "gpu-check: cannot read '$f'" >&2; exit 2; }; done
      side_by_side "$2" "$3"; exit $? ;;
    --no-build) build=false ;;
    --no-suite) suite=false ;;
    --dry-run) dry_run=true ;;
    --max-bytes) max_bytes=${2:?--max-bytes needs a size}; shift ;;
    --ops) ops=${2:?--ops needs a list}; shift ;;
    *) echo "gpu-check: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
  shift
done

# A GPU bundle (.gpu/ beside scripts/): its environment, binaries and launcher; never a build.
bundle=false
if [ -z "${BIN_DIR:-}" ] && [ -d .gpu ] && [ -d .gpu/bin ]; then
  bundle=true
  if [ -f .gpu/env.sh ]; then
    # shellcheck disable=SC1091
    source .gpu/env.sh
  fi
  BIN_DIR=.gpu/bin
fi

# A GPU is visible when nvidia-smi lists one (and CUDA_VISIBLE_DEVICES does not hide them all).
gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi
[ "${CUDA_VISIBLE_DEVICES-unset}" = "" ] && gpus=0

if [ -n "${BIN_DIR:-}" ]; then
  build=false
  bin=$BIN_DIR
else
  BUILD_DIR=${BUILD_DIR:-build-gpu}
  bin=$BUILD_DIR/bin
fi
# Sources (configs/ for the models; tests/data): the tree when it has them, else the bundle's copy.
src=$PWD
$bundle && [ ! -d configs/models ] && [ -d .gpu/configs/models ] && src=$PWD/.gpu
data=$src/tests/data
$bundle && [ ! -d "$data" ] && [ -d .gpu/tests/data ] && data=$PWD/.gpu/tests/data
# The launcher: $MPIRUN, else the bundle's OpenMPI (whose libraries env.sh put on the paths), else
# mpirun, else mpirun.openmpi (Debian's name; the bundle has no plain mpirun).
if [ -z "${MPIRUN:-}" ]; then
  for m in $($bundle && echo "$PWD/.gpu/root/usr/bin/mpirun.openmpi") mpirun mpirun.openmpi; do
    if [ -x "$m" ] || command -v "$m" >/dev/null 2>&1; then MPIRUN=$m; break; fi
  done
fi
MPIRUN=${MPIRUN:-}
[ -n "$MPIRUN" ] && ! [[ $MPIRUN == */* ]] && MPIRUN=$(command -v "$MPIRUN" || echo "$MPIRUN")

declare -A nccl_bin=([allreduce]=all_reduce_perf [allgather]=all_gather_perf
  [reducescatter]=reduce_scatter_perf [broadcast]=broadcast_perf [reduce]=reduce_perf
  [alltoall]=alltoall_perf [sendrecv]=sendrecv_perf)

if $dry_run; then
  missing=()
  need_exe() { # need_exe WHAT PATH: an executable file whose shared libraries all resolve
    if [ ! -e "$2" ]; then missing+=("$1 $2 (absent)"); echo "MISSING $1: $2"; return; fi
    if [ ! -x "$2" ]; then missing+=("$1 $2 (not executable)"); echo "MISSING $1: $2 (not executable)"; return; fi
    local libs
    libs=$(ldd "$2" 2>/dev/null | awk '/not found/ {print $1}' | sort -u | tr '\n' ' ')
    if [ -n "$libs" ]; then
      missing+=("$1 $2: libraries not found: ${libs% }"); echo "MISSING $1: $2 needs ${libs% } (ldd: not found)"
    else echo "ok      $1: $2"; fi
  }
  need_file() { # need_file WHAT PATH
    if [ -r "$2" ]; then echo "ok      $1: $2"; else missing+=("$1 $2 (absent)"); echo "MISSING $1: $2"; fi
  }
  echo "gpu-check --dry-run: $($bundle && echo "GPU bundle (.gpu/): nothing is built" ||
    { $build && echo "would build into $BUILD_DIR" || echo "prebuilt binaries in $bin"; })"
  if $build; then
    command -v cmake >/dev/null 2>&1 && echo "ok      cmake: $(command -v cmake)" ||
      { missing+=("cmake (to build)"); echo "MISSING cmake (to build into $BUILD_DIR)"; }
  else
    for b in scalefit-bench test_gpu; do need_exe "binary" "$bin/$b"; done
    if $suite; then # optional: the suite's binaries run when present
      for t in test_bench_nccl_profiler test_kernels test_bench_integration test_exit_codes \
               test_check test_cli_inputs; do
        if [ -e "$bin/$t" ]; then need_exe "suite" "$bin/$t"
        else echo "note    suite binary $t not in $bin: not run"; fi
      done
    fi
  fi
  if [ -n "$MPIRUN" ]; then need_exe "launcher" "$MPIRUN"
  else missing+=("launcher (no mpirun or mpirun.openmpi on PATH; set MPIRUN)"); echo "MISSING launcher: no mpirun or mpirun.openmpi on PATH (set MPIRUN)"; fi
  for m in gpt-2.7b llama3-8b mixtral-8x7b; do need_file "model (kernels)" "$src/configs/models/$m.yaml"; done
  need_file "model (test_gpu)" "$src/configs/models/gpt-125m.yaml"
  parent=$(dirname "${OUT_DIR:-gpu-check-x}")
  if [ -d "$parent" ] && [ -w "$parent" ]; then echo "ok      logs: ${OUT_DIR:-gpu-check-<date>} (in $parent)"
  else missing+=("writable log folder $parent"); echo "MISSING writable log folder: $parent"; fi
  for op in ${ops//,/ }; do # nccl-tests: optional (the table is skipped without it), but whole
    nt=${nccl_bin[$op]:-}
    if [ -n "$nt" ] && command -v "$nt" >/dev/null 2>&1; then need_exe "nccl-tests" "$(command -v "$nt")"
    else echo "note    nccl-tests' ${nt:-$op} not on PATH: $op runs without the side-by-side"; fi
  done
  echo "env     SCALEFIT_BIN_DIR=$( [ -d "$bin" ] && cd "$bin" && pwd || echo "$bin") SCALEFIT_SOURCE_DIR=$src"
  echo "env     SCALEFIT_TEST_DATA_DIR=$data SCALEFIT_MPIEXEC=${MPIRUN:-<none>}"
  echo "note    GPUs visible: $gpus$([ "$gpus" -eq 0 ] && echo " (a real run exits 77 here)")"
  if [ ${#missing[@]} -gt 0 ]; then
    echo "gpu-check --dry-run: ${#missing[@]} missing:" >&2
    printf '  %s\n' "${missing[@]}" >&2
    exit 2
  fi
  echo "gpu-check --dry-run: ready"
  exit 0
fi

if [ "$gpus" -eq 0 ]; then
  echo "gpu-check: no GPU visible (nvidia-smi -L lists none, or CUDA_VISIBLE_DEVICES is empty):" \
       "nothing to check; run it on a GPU machine"
  exit 77
fi

if $build; then
  [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ] &&
    export CUDACXX=/usr/local/cuda/bin/nvcc
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DSCALEFIT_ENABLE_CUDA=ON >/dev/null &&
    cmake --build "$BUILD_DIR" -j "$(nproc)" >/dev/null || { echo "gpu-check: build failed" >&2; exit 2; }
fi
[ -x "$bin/scalefit-bench" ] || { echo "gpu-check: no $bin/scalefit-bench" >&2; exit 2; }
[ -n "$MPIRUN" ] || { echo "gpu-check: no mpirun or mpirun.openmpi on PATH (set MPIRUN)" >&2; exit 2; }
export SCALEFIT_BIN_DIR=$(cd "$bin" && pwd) SCALEFIT_SOURCE_DIR=$src SCALEFIT_TEST_DATA_DIR=$data
export SCALEFIT_MPIEXEC=$MPIRUN
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=${OUT_DIR:-gpu-check-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
status=0
echo "gpu-check: $gpus GPU(s); $($bundle && echo "GPU bundle; ")binaries $bin; launcher $MPIRUN; logs in $out/"

echo "== gpu tests ($bin/test_gpu)"
"$bin/test_gpu" 2>&1 | tee "$out/test_gpu.txt" | grep -E '^\[ *(OK|FAILED|SKIPPED|PASSED) ' || true
grep -q '^\[  FAILED  \]' "$out/test_gpu.txt" && status=1

for op in ${ops//,/ }; do
  echo "== comm $op, 1 GPU, 8 B to $max_bytes (-c)"
  # --nccl-tests: samples of 20 operations as nccl-tests' -n 20 (same sync tail per op), -w 1.
  "$MPIRUN" -np 1 "$bin/scalefit-bench" comm --backend nccl --ops "$op" -b 8 -e "$max_bytes" -f 2 \
    --nccl-tests -c >"$out/scalefit_$op.txt" 2>&1 || status=1
  nt=${nccl_bin[$op]:-}
  if [ -n "$nt" ] && command -v "$nt" >/dev/null 2>&1; then
    "$nt" -b 8 -e "$max_bytes" -f 2 -g 1 -n 20 -w 1 -c 1 >"$out/nccl-tests_$op.txt" 2>&1 || status=1
    side_by_side "$out/scalefit_$op.txt" "$out/nccl-tests_$op.txt" | tee "$out/table_$op.txt"
  else
    echo "(nccl-tests' $nt not on PATH: scalefit alone)"
    grep -vE '^#' "$out/scalefit_$op.txt" | head -40
  fi
done

# The GPU's clocks, power, temperature and throttle reasons every 200 ms while the kernels run
# (the second H200 contact saw one GEMM shape at 684 and 775 TFLOP/s in one run, cause unknown):
# smi_clocks.csv, beside the kernels files' start_time stamps. Absent when nvidia-smi cannot query.
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 200 >"$out/smi_clocks.csv" 2>/dev/null &
smi_pid=$!
echo "== kernels: GPT-2.7B layer (head size 80, which cuDNN fused attention takes), cublas bf16, fused and unfused attention (-c)"
for att in fused unfused; do
  "$bin/scalefit-bench" kernels --engine cublas --model "$src/configs/models/gpt-2.7b.yaml" -d bf16 \
    --attention "$att" -c --peak-tflops 989 --out "$out/kernels_$att.jsonl" | tee "$out/kernels_$att.txt" |
    grep -E '^# (per-layer|check|note)|attention|attn_|softmax' || status=1
done
echo "== kernels: Llama 3 8B layer (GQA 32/8 heads, SwiGLU), cublas bf16, fused attention (-c)"
"$bin/scalefit-bench" kernels --engine cublas --model "$src/configs/models/llama3-8b.yaml" -d bf16 \
  --attention fused -c --peak-tflops 989 --out "$out/kernels_llama3-8b.jsonl" >"$out/kernels_llama3-8b.txt" 2>&1 ||
  status=1
grep -E '^# (per-layer|check)' "$out/kernels_llama3-8b.txt"
echo "== kernels: Mixtral 8x7B MoE layer at EP 4 (two local experts), balanced and --moe-imbalance 1.5 (grouped GEMMs; -c)"
for imb in 1 1.5; do
  "$bin/scalefit-bench" kernels --engine cublas --model "$src/configs/models/mixtral-8x7b.yaml" -d bf16 \
    --attention fused --ep 4 --moe-imbalance "$imb" -c --peak-tflops 989 \
    --out "$out/kernels_mixtral-ep4-imb$imb.jsonl" >"$out/kernels_mixtral-ep4-imb$imb.txt" 2>&1 || status=1
  grep -E '^# (per-layer|check)|expert' "$out/kernels_mixtral-ep4-imb$imb.txt"
done
echo "== kernels --sweep full (bf16, -c)"
"$bin/scalefit-bench" kernels --engine cublas --sweep full -d bf16 -c --out "$out/sweep.jsonl" \
  >"$out/sweep.txt" 2>&1 || status=1
tail -3 "$out/sweep.txt"
if [ -n "$smi_pid" ]; then
  kill "$smi_pid" 2>/dev/null
  wait "$smi_pid" 2>/dev/null
  echo "== clocks while the kernels ran ($out/smi_clocks.csv): SM MHz min/max, power W max"
  awk -F', *' 'NR > 1 && $2 + 0 > 0 { c = $2 + 0; p = $4 + 0; n++
      if (!lo || c < lo) lo = c; if (c > hi) hi = c; if (p > pw) pw = p }
    END { if (n) printf "%d samples: SM %d-%d MHz, power up to %.0f W\n", n, lo, hi, pw
          else print "no samples" }' "$out/smi_clocks.csv"
fi
# The CPU suite's test binaries that launch scalefit-bench or load the NCCL profiler, run with
# the GPU visible ("the suite also passes where a GPU is visible"): each that the binaries folder
# has, with its paths from the variables above (tests/support/paths.hpp). --no-suite skips them.
if $suite; then
  for t in test_bench_nccl_profiler test_kernels test_bench_integration test_exit_codes \
           test_check test_cli_inputs; do
    [ -x "$bin/$t" ] || continue
    timeout 600 "$bin/$t" >"$out/$t.txt" 2>&1
    rc=$?
    echo "== $t with the GPU visible: $(grep -E '^\[  (PASSED|FAILED)  \] [0-9]+ test' "$out/$t.txt" |
      tr '\n' ' ')(exit $rc)"
    [ $rc -eq 0 ] || { status=1; grep -E '^\[  FAILED  \] [A-Za-z]' "$out/$t.txt" | sort -u; }
  done
fi
echo "gpu-check: $([ $status -eq 0 ] && echo passed || echo FAILED) (logs in $out/)"
exit $status
