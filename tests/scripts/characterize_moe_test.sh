#!/usr/bin/env bash
# scripts/characterize.sh with DRY_RUN=1 (no launch, no binaries): an MoE model in
# KERNELS_MODELS adds alltoall/alltoallv to a narrowed OPS, a skewed AllToAllv sweep per node
# count and --ep to the MoE model's kernels; a dense list adds none of it; MLA models are skipped.
# Usage: characterize_moe_test.sh SOURCE_DIR
set -euo pipefail
src=${1:?source dir}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

plan() { # plan NAME MODELS OPS
  LAUNCHER=srun GPUS_PER_NODE=8 HOSTS=$'n1\nn2' SYSTEM=t OUT="$tmp/$1" DRY_RUN=1 \
    KERNELS_MODELS="$2" OPS="$3" KERNELS_EP=2 bash "$src/scripts/characterize.sh" 2>&1
}

moe=$(plan moe "configs/models/gpt-13b.yaml configs/models/mixtral-8x7b.yaml configs/models/deepseek-v2-lite.yaml" allreduce)
echo "$moe"
grep -q -- "comm --backend nccl --ops allreduce,alltoall,alltoallv .*--groups world,intra " <<<"$moe" ||
  fail "1-node sweep without alltoall,alltoallv"
grep -q -- "--ops allreduce,alltoall,alltoallv .*--groups world,inter " <<<"$moe" ||
  fail "2-node sweep without alltoall,alltoallv over world,inter (intra groups once, at 1 node)"
[ "$(grep -c -- "dry run: launch .*--ops alltoallv --alltoallv-matrix skewed" <<<"$moe")" = 2 ] ||
  fail "expected one skewed alltoallv sweep per node count (2)"
grep -q -- "comm-n2-alltoallv-skewed.jsonl --resume" <<<"$moe" || fail "skewed sweep output"
grep -q -- "kernels --engine cublas --model .*/configs/models/mixtral-8x7b.yaml -d bf16 --ep 2 " <<<"$moe" ||
  fail "mixtral kernels without --ep"
grep -q -- "--model .*/configs/models/gpt-13b.yaml -d bf16 --system" <<<"$moe" ||
  fail "dense kernels got MoE flags"
grep -q -- "deepseek-v2-lite.yaml: MLA attention has no kernel list yet, skipped" <<<"$moe" ||
  fail "MLA model not skipped"
grep -q "^MOE_MODELS=.*/configs/models/mixtral-8x7b.yaml" "$tmp/moe/job.env" || fail "job.env MOE_MODELS"
[ ! -e "$tmp/moe/steps/comm-n1.done" ] || fail "a dry run marked a step done"

# OPS=all already has alltoall and alltoallv (scalefit-bench's all_ops): kept as is.
all=$(plan all "configs/models/qwen3-30b-a3b.yaml" all)
grep -q -- "--ops all -b" <<<"$all" || fail "OPS=all rewritten"
grep -q -- "--alltoallv-matrix skewed" <<<"$all" || fail "no skewed sweep for qwen3"

dense=$(plan dense "configs/models/gpt-13b.yaml configs/models/llama3-8b.yaml" allreduce)
echo "$dense"
grep -q -- "--ops allreduce -b" <<<"$dense" || fail "dense OPS changed"
! grep -q -- "alltoall" <<<"$dense" || fail "dense list got alltoall"
! grep -q -- "--ep" <<<"$dense" || fail "dense list got --ep"
# INTRA_GROUPS=every: intra-node groups at every node count.
every=$(INTRA_GROUPS=every plan every "configs/models/gpt-13b.yaml" allreduce)
grep -q -- "--ops allreduce .*--groups world,intra,inter " <<<"$every" || fail "INTRA_GROUPS=every"
echo "characterize MoE plan: ok"
