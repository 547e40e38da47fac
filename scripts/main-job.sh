#!/usr/bin/env bash
# scalefit's main job on this machine: measure every collective on real MPI traffic (host
# backend, 4 ranks in 2 emulated nodes, checked), time a small transformer layer's kernels (Eigen,
# shapes scaled down), fit the curves, write the fit file, show the rest of the chain (an estimate
# of GPT-13B and a Polaris-like vs DGX-like comparison, their collectives priced by the shipped
# A100 reference fit, results/reference/; the estimator's error on the published runs of
# tests/data/published-runs) and draw it all into the report (results/local/report/index.html:
# curves, kernels, the estimate, the comparison, the published runs' parity plot). A killed run resumes where it stopped (--resume; the kernels file is kept
# once complete): delete results/local/ to start over. The time of the first run (from
# scripts/setup.sh's start to the report) is printed at the end.
#
# Environment: BUILD_DIR (default build), NP (default 4), MAX_BYTES (default 16M: past the
# host caches, where the curves fall; 64M doubles the measure step, 36 -> 69 s on 2 cores),
# KERNELS_SCALE (default 0.25; 0 skips the kernels step).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
NP=${NP:-4}
MAX_BYTES=${MAX_BYTES:-16M}
KERNELS_SCALE=${KERNELS_SCALE:-0.25}
out=results/local
mkdir -p "$out"

mpi_args=(--oversubscribe)
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

start=$(date +%s)
mpirun -np "$NP" "${mpi_args[@]}" "$BUILD_DIR/bin/scalefit-bench" comm --backend mpi --ops all \
  --groups world,intra,inter --emulate-nodes 2 -c -b 8 -e "$MAX_BYTES" -f 2 \
  --system local --out "$out/comm.jsonl" --resume
results=("$out/comm.jsonl")
if [ "$KERNELS_SCALE" != 0 ]; then
  if [ ! -s "$out/kernels.jsonl" ]; then
    mpirun -np 1 "${mpi_args[@]}" "$BUILD_DIR/bin/scalefit-bench" kernels --engine cpu \
      --model configs/models/gpt-125m.yaml --scale "$KERNELS_SCALE" --max-time 0.25 --system local \
      --out "$out/kernels.jsonl.part"
    mv "$out/kernels.jsonl.part" "$out/kernels.jsonl"
  fi
  results+=("$out/kernels.jsonl")
fi
measured=$(date +%s)
# The kernels' compute fit joins the fit file; CPU kernels too noisy to fit do not cost the
# collectives' fit.
if ! "$BUILD_DIR/bin/scalefit" fit "${results[@]}" -o "$out/fit.yaml"; then
  echo "main job: the fit with the kernels failed (above); fitting the collectives alone" >&2
  "$BUILD_DIR/bin/scalefit" fit "$out/comm.jsonl" -o "$out/fit.yaml"
fi
done_at=$(date +%s)

# The rest of the chain: measured curves price a training estimate and a cluster comparison, and
# the published runs show how far such estimates are from real steps; the report draws them all.
ref=results/reference/a100-sxm4-40gb-nvswitch/fit.yaml
sf="$BUILD_DIR/bin/scalefit"
est_args=(--system configs/systems/dgx-a100.yaml --fit "$ref" --model configs/models/gpt-13b.yaml
          --tp 8 --dp 1 --sp --micro-batch 1 --global-batch 64)
cmp_args=(configs/systems/polaris.yaml configs/systems/dgx-a100.yaml --fit-b "$ref"
          --model configs/models/gpt-13b.yaml --gpus 64)
echo
echo "=== estimate: GPT-13B, TP 8 (SP) on one DGX A100; collectives priced by the shipped A100 fit ($ref)"
"$sf" estimate "${est_args[@]}" | tee "$out/estimate-gpt-13b-dgx-a100.txt"
"$sf" estimate "${est_args[@]}" --json >"$out/estimate-gpt-13b-dgx-a100.json"
echo
echo "=== compare: GPT-13B on 64 GPUs, Polaris-like (4 A100 per node, spec tables) vs DGX-like (8 per node, the A100 fit)"
"$sf" compare "${cmp_args[@]}" | tee "$out/compare-polaris-dgx-a100-gpt-13b.txt"
"$sf" compare "${cmp_args[@]}" --json >"$out/compare-polaris-dgx-a100-gpt-13b.json"
echo
echo "=== validate: the estimator on published training runs (tests/data/published-runs), error per source"
"$sf" validate tests/data/published-runs/*.jsonl | tee "$out/published-runs.txt"
"$sf" validate tests/data/published-runs/*.jsonl --json >"$out/published-runs.json"
"$sf" report "${results[@]}" --fit "$out/fit.yaml" -o "$out/report" \
  --estimate "$out/estimate-gpt-13b-dgx-a100.json" \
  --estimate "$out/compare-polaris-dgx-a100-gpt-13b.json" --estimate "$out/published-runs.json" \
  --title "scalefit: this machine (MPI on host memory, $NP ranks, 2 emulated nodes)"
reported=$(date +%s)
curves=$(grep -c '^ *op: ' "$out/fit.yaml" || true)
echo
echo "main job: the local fit ($out/fit.yaml) prices this machine's own curves ($curves curves:" \
     "host-memory collectives over MPI, and the CPU kernels' compute model); the GPU estimate and" \
     "comparison above take their collectives from the shipped A100 fit (terms 'priced by fit:')" \
     "and their kernels from the systems' spec tables ('spec:')."
echo "main job: measured in $((measured - start)) s, fitted in $((done_at - measured)) s;" \
     "results: ${results[*]}, fit file: $out/fit.yaml"
first="$BUILD_DIR/.first-run-start"
if [ -f "$first" ] && (( reported - $(cat "$first") < 7200 )); then
  stages=""
  if [ -f "$BUILD_DIR/.first-run-stages" ]; then
    read -r _ pkg_s < <(grep '^packages ' "$BUILD_DIR/.first-run-stages")
    read -r _ build_s < <(grep '^build ' "$BUILD_DIR/.first-run-stages")
    stages=" (packages ${pkg_s} s, build ${build_s} s, measure $((measured - start)) s, fit and report $((reported - measured)) s)"
  fi
  echo "main job: first run, from scripts/setup.sh's start to the report: $((reported - $(cat "$first"))) s${stages}"
  rm -f "$first" "$BUILD_DIR/.first-run-stages" # later runs time themselves only
else
  echo "main job: measured to report in $((reported - start)) s"
fi
echo "main job: report: $(pwd)/$out/report/index.html"
