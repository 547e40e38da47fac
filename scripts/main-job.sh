#!/usr/bin/env bash
# scalefit's main job on this machine: measure every collective on real MPI traffic (host
# backend, 4 ranks in 2 emulated nodes, checked), time a small transformer layer's kernels (Eigen,
# shapes scaled down), fit the curves, write the fit file, and draw the report
# (results/local/report/index.html). A killed run resumes where it stopped (--resume; the kernels
# file is kept once complete): delete results/local/ to start over.
#
# Environment: BUILD_DIR (default build), NP (default 4), MAX_BYTES (default 64M),
# KERNELS_SCALE (default 0.25; 0 skips the kernels step).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
NP=${NP:-4}
MAX_BYTES=${MAX_BYTES:-64M}
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
      --model configs/models/gpt-125m.yaml --scale "$KERNELS_SCALE" --max-time 0.5 --system local \
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
"$BUILD_DIR/bin/scalefit" report "${results[@]}" --fit "$out/fit.yaml" -o "$out/report" \
  --title "scalefit: this machine (MPI on host memory, $NP ranks, 2 emulated nodes)"
echo "main job: measured in $((measured - start)) s, fitted in $((done_at - measured)) s;" \
     "results: ${results[*]}, fit file: $out/fit.yaml"
echo "main job: report: $(pwd)/$out/report/index.html"
