#!/usr/bin/env bash
# gpu-check.sh: what to run on a new GPU box. Builds scalefit with CUDA, runs the `gpu` tests
# (nccl -c sweeps of every op, dtype and placement, with and without -G; cuBLAS and fused
# attention with -c), then a short comm sweep next to nccl-tests (when all_reduce_perf is on
# PATH) and a kernels run, and prints side-by-side tables:
#   size | scalefit time(us) algbw busbw | nccl-tests time(us) algbw busbw | time ratio
# (out-of-place columns of both tools; ratio = scalefit time / nccl-tests time, 1.00 = equal).
#
# Usage: scripts/gpu-check.sh [--no-build] [--max-bytes SIZE] [--ops LIST]
#        scripts/gpu-check.sh --table SCALEFIT_LOG NCCL_TESTS_LOG   (only the side-by-side table)
# Environment: BUILD_DIR (default build-gpu); BIN_DIR (prebuilt binaries, e.g. .gpu/bin from
#   ../shared/tools/gpu-bundle.sh; implies --no-build); MPIRUN (default mpirun); OUT_DIR (logs,
#   default gpu-check-<date>).
# Exit codes: 0 all passed; 1 a test or a -c check failed; 2 bad usage or build failure;
#   77 no GPU visible (nothing run; the automake "skipped" code).
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
max_bytes=1G
ops=allreduce,allgather,reducescatter,broadcast,reduce,alltoall,sendrecv
while (($#)); do
  case "$1" in
    --table)
      [ $# -eq 3 ] || { echo "gpu-check: --table needs SCALEFIT_LOG NCCL_TESTS_LOG" >&2; exit 2; }
      for f in "$2" "$3"; do [ -r "$f" ] || { echo "gpu-check: cannot read '$f'" >&2; exit 2; }; done
      side_by_side "$2" "$3"; exit $? ;;
    --no-build) build=false ;;
    --max-bytes) max_bytes=${2:?--max-bytes needs a size}; shift ;;
    --ops) ops=${2:?--ops needs a list}; shift ;;
    *) echo "gpu-check: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
  shift
done

# A GPU is visible when nvidia-smi lists one (and CUDA_VISIBLE_DEVICES does not hide them all).
gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi
if [ "${CUDA_VISIBLE_DEVICES-unset}" = "" ] || [ "$gpus" -eq 0 ]; then
  echo "gpu-check: no GPU visible (nvidia-smi -L lists none, or CUDA_VISIBLE_DEVICES is empty):" \
       "nothing to check; run it on a GPU machine"
  exit 77
fi

if [ -n "${BIN_DIR:-}" ]; then
  build=false
  bin=$BIN_DIR
else
  BUILD_DIR=${BUILD_DIR:-build-gpu}
  bin=$BUILD_DIR/bin
fi
if $build; then
  [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ] &&
    export CUDACXX=/usr/local/cuda/bin/nvcc
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DSCALEFIT_ENABLE_CUDA=ON >/dev/null &&
    cmake --build "$BUILD_DIR" -j "$(nproc)" >/dev/null || { echo "gpu-check: build failed" >&2; exit 2; }
fi
[ -x "$bin/scalefit-bench" ] || { echo "gpu-check: no $bin/scalefit-bench" >&2; exit 2; }
export SCALEFIT_BIN_DIR=$(cd "$bin" && pwd) SCALEFIT_SOURCE_DIR=$PWD
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=${MPIRUN:-mpirun}
out=${OUT_DIR:-gpu-check-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
status=0
echo "gpu-check: $gpus GPU(s); logs in $out/"

echo "== gpu tests ($bin/test_gpu)"
"$bin/test_gpu" 2>&1 | tee "$out/test_gpu.txt" | grep -E '^\[ *(OK|FAILED|SKIPPED|PASSED) ' || true
grep -q '^\[  FAILED  \]' "$out/test_gpu.txt" && status=1

declare -A nccl_bin=([allreduce]=all_reduce_perf [allgather]=all_gather_perf
  [reducescatter]=reduce_scatter_perf [broadcast]=broadcast_perf [reduce]=reduce_perf
  [alltoall]=alltoall_perf [sendrecv]=sendrecv_perf)
for op in ${ops//,/ }; do
  echo "== comm $op, 1 GPU, 8 B to $max_bytes (-c)"
  "$MPIRUN" -np 1 "$bin/scalefit-bench" comm --backend nccl --ops "$op" -b 8 -e "$max_bytes" -f 2 \
    -c >"$out/scalefit_$op.txt" 2>&1 || status=1
  nt=${nccl_bin[$op]:-}
  if [ -n "$nt" ] && command -v "$nt" >/dev/null 2>&1; then
    "$nt" -b 8 -e "$max_bytes" -f 2 -g 1 -c 1 >"$out/nccl-tests_$op.txt" 2>&1 || status=1
    side_by_side "$out/scalefit_$op.txt" "$out/nccl-tests_$op.txt" | tee "$out/table_$op.txt"
  else
    echo "(nccl-tests' $nt not on PATH: scalefit alone)"
    grep -vE '^#' "$out/scalefit_$op.txt" | head -40
  fi
done

echo "== kernels: GPT-1.3B layer, cublas bf16, fused and unfused attention (-c)"
for att in fused unfused; do
  "$bin/scalefit-bench" kernels --engine cublas --model configs/models/gpt-1.3b.yaml -d bf16 \
    --attention "$att" -c --peak-tflops 989 --out "$out/kernels.jsonl" | tee "$out/kernels_$att.txt" |
    grep -E '^# (per-layer|check|note)|attention|attn_|softmax' || status=1
done
echo "== kernels --sweep full (bf16, -c)"
"$bin/scalefit-bench" kernels --engine cublas --sweep full -d bf16 -c --out "$out/sweep.jsonl" \
  >"$out/sweep.txt" 2>&1 || status=1
tail -3 "$out/sweep.txt"
echo "gpu-check: $([ $status -eq 0 ] && echo passed || echo FAILED) (logs in $out/)"
exit $status
