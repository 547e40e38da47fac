#!/usr/bin/env bash
# scalefit's main job on this machine: measure every collective on real MPI traffic (host
# backend, 4 ranks in 2 emulated nodes, checked), fit the curves, write the fit file, and print a
# summary. A killed run resumes where it stopped (--resume): delete results/local/ to start over.
#
# Environment: BUILD_DIR (default build), NP (default 4), MAX_BYTES (default 64M).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
NP=${NP:-4}
MAX_BYTES=${MAX_BYTES:-64M}
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
measured=$(date +%s)
"$BUILD_DIR/bin/scalefit" fit "$out/comm.jsonl" -o "$out/fit.yaml"
done_at=$(date +%s)
echo "main job: measured in $((measured - start)) s, fitted in $((done_at - measured)) s;" \
     "results: $out/comm.jsonl, fit file: $out/fit.yaml"
