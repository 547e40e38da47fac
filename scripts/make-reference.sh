#!/usr/bin/env bash
# Regenerates the reference results in results/reference/<system>/ from the raw logs committed in
# results/reference/<system>/raw/ (copied unchanged from public nccl-tests logs and the project's
# one-H100 measurements; each system's PROVENANCE.md names the sources):
#   comm.jsonl   scalefit ingest of every raw nccl-tests log (node counts where a log names no host)
#   fit.yaml     scalefit fit of comm.jsonl and raw kernels JSONL (what `estimate --fit` reads)
#   *.json       example estimates priced by fit.yaml (where a configs/systems file matches)
#   report/      scalefit report: PNGs, index.html, data/*.json
# Usage: scripts/make-reference.sh [SYSTEM...]   (default: every system)
# Environment: BUILD_DIR (default build); SCALEFIT (the scalefit binary, default
#   BUILD_DIR/bin/scalefit); REF_DIR (where the systems' folders are, default results/reference;
#   tests/scripts/reference_fresh_test.sh regenerates a copy); NO_REPORT=1 skips the reports.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
sf=${SCALEFIT:-$BUILD_DIR/bin/scalefit}
[ -x "$sf" ] || { echo "make-reference: build first ($sf missing): bash scripts/setup.sh" >&2; exit 2; }
ref=${REF_DIR:-results/reference}

# ingest SYSTEM NAME NNODES LOG: appends the log's records to SYSTEM/comm.jsonl.
ingest() {
  "$sf" ingest nccl-tests "$ref/$1/raw/$4" --system "$2" --nnodes "$3" --append -q \
    -o "$ref/$1/comm.jsonl"
}

# fit_and_report SYSTEM TITLE [ESTIMATE_JSON...]: fit.yaml and report/ of SYSTEM.
fit_and_report() {
  local sys=$1 title=$2
  shift 2
  local kernels=()
  for k in "$ref/$sys"/raw/*.jsonl; do [ -e "$k" ] && kernels+=("$k"); done
  "$sf" fit "$ref/$sys/comm.jsonl" "${kernels[@]}" -o "$ref/$sys/fit.yaml" >"$ref/$sys/fit.txt"
  local est=()
  for e in "$@"; do est+=(--estimate "$e"); done
  [ "${NO_REPORT:-0}" = 1 ] && return 0
  rm -rf "$ref/$sys/report"
  "$sf" report "$ref/$sys/comm.jsonl" "${kernels[@]}" --fit "$ref/$sys/fit.yaml" "${est[@]}" \
    --title "$title" -o "$ref/$sys/report"
}

systems=("$@")
((${#systems[@]})) || systems=(a100-sxm4-40gb-nvswitch h100-hgx-ib rtx2080ti-pcie h100-sxm-1gpu h200-sxm-1gpu)
for sys in "${systems[@]}"; do
  rm -f "$ref/$sys/comm.jsonl"
  case $sys in
    a100-sxm4-40gb-nvswitch)
      for op in allgather allreduce alltoall broadcast reduce reducescatter; do
        ingest "$sys" a100-sxm4-40gb-nvswitch 1 "a100-sxm4-40gb_8gpu_nvswitch_singlenode_$op.txt"
      done
      fit_and_report "$sys" "Reference: 8x A100-SXM4-40GB, one NVSwitch node (nccl-tests)"
      # GPT-13B on one such node, TP 8 priced by the measured curves, and the best layouts.
      "$sf" estimate --system configs/systems/dgx-a100.yaml --fit "$ref/$sys/fit.yaml" \
        --model configs/models/gpt-13b.yaml --dp 1 --tp 8 --pp 1 --sp --recompute selective \
        --global-batch 8 --json >"$ref/$sys/estimate-gpt-13b-tp8.json"
      "$sf" search --system configs/systems/dgx-a100.yaml --fit "$ref/$sys/fit.yaml" \
        --model configs/models/gpt-13b.yaml --gpus 8 --global-batch 64 --top 8 --json \
        >"$ref/$sys/search-gpt-13b-8gpu.json"
      fit_and_report "$sys" "Reference: 8x A100-SXM4-40GB, one NVSwitch node (nccl-tests)" \
        "$ref/$sys/estimate-gpt-13b-tp8.json" "$ref/$sys/search-gpt-13b-8gpu.json"
      ;;
    h100-hgx-ib)
      ingest "$sys" h100-hgx-ib 2 h100-hgx-xe9680_ib-8x400G_2node_16gpu_allreduce.txt
      ingest "$sys" h100-hgx-ib 4 h100-hgx-xe9680_ib-8x400G_4node_32gpu_allreduce.txt
      fit_and_report "$sys" "Reference: H100 HGX, 2 and 4 nodes, 8x400G InfiniBand (nccl-tests)"
      # GPT-1.3B data-parallel over 4 nodes: the gradient AllReduce priced by the 4-node curve;
      # and GPT-13B on 32 GPUs of this system against the A100 node's curves (Cheng et al.).
      "$sf" estimate --system configs/systems/dgx-h100.yaml --fit "$ref/$sys/fit.yaml" \
        --model configs/models/gpt-1.3b.yaml --dp 32 --tp 1 --pp 1 --zero 0 --global-batch 256 \
        --json >"$ref/$sys/estimate-gpt-1.3b-dp32.json"
      "$sf" compare configs/systems/dgx-a100.yaml configs/systems/dgx-h100.yaml \
        --fit-a "$ref/a100-sxm4-40gb-nvswitch/fit.yaml" --fit-b "$ref/$sys/fit.yaml" \
        --model configs/models/gpt-13b.yaml --gpus 32 --json >"$ref/$sys/compare-a100-h100-gpt-13b.json"
      fit_and_report "$sys" "Reference: H100 HGX, 2 and 4 nodes, 8x400G InfiniBand (nccl-tests)" \
        "$ref/$sys/estimate-gpt-1.3b-dp32.json" "$ref/$sys/compare-a100-h100-gpt-13b.json"
      ;;
    rtx2080ti-pcie)
      for op in allgather allreduce alltoall broadcast reduce; do
        ingest "$sys" rtx2080ti-pcie 1 "rtx2080ti_2gpu_pcie_noP2P_$op.txt"
      done
      fit_and_report "$sys" "Reference: 2x RTX 2080 Ti on PCIe, no P2P (nccl-tests)"
      ;;
    h100-sxm-1gpu)
      for op in all_gather all_reduce alltoall broadcast reduce reduce_scatter sendrecv; do
        ingest "$sys" h100-sxm-1gpu 1 "nccl-tests_1gpu_$op.txt"
      done
      fit_and_report "$sys" "Reference: one H100 80GB HBM3 SXM (nccl-tests, kernels)"
      ;;
    h200-sxm-1gpu)
      # the nccl-tests curves (raw/scalefit_<op>.txt, scalefit-bench's own run of the same sizes
      # that hour, are the side-by-side of tests/data/gpu-h200, not fitted twice)
      for op in allreduce allgather reducescatter broadcast reduce alltoall sendrecv; do
        ingest "$sys" h200-sxm-1gpu 1 "nccl-tests_$op.txt"
      done
      fit_and_report "$sys" "Reference: one H200 (nccl-tests and scalefit-bench, kernels)"
      # GPT-2.7B's training step on 8 H200s of a DGX H200, every GEMM and attention kernel priced
      # by the measured fits (the collectives by the system's spec: one GPU measures no link)
      "$sf" estimate --system configs/systems/dgx-h200.yaml --fit "$ref/$sys/fit.yaml" \
        --model configs/models/gpt-2.7b.yaml --dp 8 --tp 1 --pp 1 --zero 1 --global-batch 256 \
        --json >"$ref/$sys/estimate-gpt-2.7b-dp8.json"
      fit_and_report "$sys" "Reference: one H200 (nccl-tests and scalefit-bench, kernels)" \
        "$ref/$sys/estimate-gpt-2.7b-dp8.json"
      ;;
    *) echo "make-reference: unknown system '$sys'" >&2; exit 2 ;;
  esac
  echo "make-reference: $ref/$sys: fit.yaml, report/index.html"
done
