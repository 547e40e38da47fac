#!/usr/bin/env bash
# Builds the seed corpora of the libFuzzer targets (fuzz/README.md) into OUT/<target>/ from
# tests/data, configs and fuzz/seeds, plus long-line variants: real logs, JSONL and YAML with one
# inserted line of 40 KB, 100 KB and 200 KB (an NCCL_DEBUG dump, an environment echo, a long
# string field), which the fuzzer must reach: run with -max_len of at least 262144 (fuzz/run.sh).
#
# Usage: fuzz/make-corpus.sh OUT
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: fuzz/make-corpus.sh OUT" >&2; exit 2; }
out=$1
src="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out"

# copy TARGET FILES...: one seed per file.
copy() {
  local target=$1; shift
  mkdir -p "$out/$target"
  local f
  for f in "$@"; do cp "$f" "$out/$target/$(basename "$(dirname "$f")")_$(basename "$f")"; done
}

# long_variants TARGET FILE PREFIX: FILE with one line of PREFIX + filler (40, 100, 200 KB) inserted
# after its first line, and one with a long line at the end without a newline.
long_variants() {
  local target=$1 file=$2 prefix=$3 kb
  for kb in 40 100 200; do
    {
      head -n 1 "$file"
      printf '%s' "$prefix"
      head -c $((kb * 1024)) /dev/zero | tr '\0' 'x'
      printf '\n'
      tail -n +2 "$file"
    } >"$out/$target/long${kb}k_$(basename "$file")"
  done
  { cat "$file"; printf '%s' "$prefix"; head -c $((64 * 1024)) /dev/zero | tr '\0' '9'; } \
    >"$out/$target/longtail64k_$(basename "$file")"
}

# A long table row: a size followed by 40 KB of spaces and numbers (a row the column regexes see).
long_row() {
  local target=$1 file=$2 name=$3
  {
    cat "$file"
    printf '   1048576   262144  float  sum  -1'
    for _ in $(seq 1 4000); do printf '    12.34'; done
    printf '\n'
  } >"$out/$target/$name"
}

d="$src/tests/data"
copy nccl_tests "$d"/nccl-tests/*.txt
long_variants nccl_tests "$d/nccl-tests/a100-sxm4-40gb_8gpu_nvswitch_singlenode_allreduce.txt" \
  "# NCCL INFO NCCL_DEBUG dump "
long_variants nccl_tests "$d/nccl-tests/synthetic_current_two_tests.txt" "#  Rank  0 Group  0 Pid "
long_row nccl_tests "$d/nccl-tests/rtx2080ti_2gpu_pcie_noP2P_allreduce.txt" longrow_allreduce.txt

copy osu "$d"/osu/*.txt
# The pastes people send (tests/data/real-logs: HTML archives, wrapped launch lines, untitled
# tables, blank redop columns): each reader starts from the real layouts it must survive.
copy osu "$d"/real-logs/*osu_*.txt
copy nccl_tests $(ls "$d"/real-logs/*.txt | grep -v -e 'osu_' -e '/imb_')
long_variants osu "$d/osu/osu_allreduce.txt" "# OSU MPI environment: PATH="
long_variants osu "$d/osu/synthetic_osu_bw.txt" "# Size  Bandwidth (MB/s) "
long_row osu "$d/osu/osu_allreduce_full_validate_float.txt" longrow_osu.txt

# JSONL: small seeds (the context and a few records) keep executions fast; whole files too.
copy jsonl "$d"/fitting/*.jsonl
first_jsonl=$(ls "$d"/fitting/*.jsonl | head -n 1)
for n in 1 2 4; do head -n "$n" "$first_jsonl" >"$out/jsonl/head${n}_$(basename "$first_jsonl")"; done
head -n 3 "$first_jsonl" >"$out/jsonl/small.jsonl"
long_variants jsonl "$out/jsonl/small.jsonl" '{"type": "context", "note": "'

copy config_yaml "$src"/configs/systems/*.yaml "$src"/configs/models/*.yaml
copy config_yaml $(find "$d" -name '*.yaml' ! -name 'fit_*')
long_variants config_yaml "$src/configs/systems/dgx-a100.yaml" "# environment: "
long_variants config_yaml "$src/configs/models/gpt-13b.yaml" "name: "

copy fit_file $(find "$d" "$src/fuzz/seeds/fit_file" -name 'fit_*.yaml')
long_variants fit_file "$(find "$d" -name 'fit_*.yaml' | head -n 1)" "# source: "

copy size "$src"/fuzz/seeds/size/*

# Published runs: one-record seeds per source (each estimated in full per execution) and one file.
mkdir -p "$out/published_runs"
for f in "$d"/published-runs/*.jsonl; do
  head -n 1 "$f" >"$out/published_runs/one_$(basename "$f")"
done
copy published_runs "$d"/published-runs/nemotron4-340b-report.jsonl

# Kernel records: small heads of a model's kernels, an MoE run with unequal groups (its context,
# a grouped GEMM of group_tokens and grouped_gemm, a dense GEMM), and one whole layer.
mkdir -p "$out/kernels"
for n in 2 4 8; do head -n "$n" "$d/kernels/kernels_gpt-1.3b_bf16.jsonl" >"$out/kernels/head${n}_gpt-1.3b.jsonl"; done
cat >"$out/kernels/moe_unequal.jsonl" <<'JSONL'
{"type":"context","schema":"scalefit.kernels/1","device":"NVIDIA H200","engine":"cublas","grouped_gemm":"per-expert"}
{"type":"kernel","kind":"grouped_gemm","dtype":"bf16","name":"expert_up.fwd","m":4096,"n":28672,"k":4096,"batch":2,"group_tokens":[6144,4096],"tokens_dim":"m","grouped_gemm":"per-expert","time_us":3130.7}
{"type":"kernel","kind":"grouped_gemm","dtype":"bf16","name":"expert_up.wgrad","m":4096,"n":28672,"k":4096,"batch":2,"group_tokens":[6144,4096],"tokens_dim":"k","grouped_gemm":"cublas-grouped","time_us":7891.5}
{"type":"kernel","kind":"gemm","dtype":"bf16","name":"qkv.fwd","m":4096,"n":6144,"k":4096,"batch":1,"time_us":265.2}
JSONL
copy kernels "$d"/kernels/h200_gpt-2.7b_bf16_fused.jsonl

# The report: `scalefit estimate|compare|search|validate --json` documents (fuzz/seeds/report), a comm
# file, a kernels file and a pairs file, each read both ways (results and --estimate).
copy report "$src"/fuzz/seeds/report/*.json "$d"/report/*.jsonl
head -n 6 "$d/fitting/local_mpi_3curves.jsonl" >"$out/report/comm_head6.jsonl"

for t in "$out"/*/; do
  echo "make-corpus: $(basename "$t"): $(ls "$t" | wc -l) seeds, largest $(wc -c "$t"* | sort -n | tail -n 2 | head -n 1 | awk '{print $1}') B"
done
