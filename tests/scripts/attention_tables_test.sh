#!/usr/bin/env bash
# The fused-attention tables of the Blackwell and H200 system files are what scripts/derive_attention_table.py
# makes of the measured cuDNN kernels they cite (tests/data/kernels/cudnn-sdpa/), and the script
# refuses a table that differs and a malformed measurement.
# Usage: attention_tables_test.sh SOURCE_ROOT
set -euo pipefail
root=$1
cd "$root"
derive=scripts/derive_attention_table.py
fail() { echo "FAIL: $*" >&2; exit 1; }
k=tests/data/kernels/cudnn-sdpa
for pair in gb200-nvl72:gb200 gb300-nvl72:gb300 dgx-b200:gb200; do
  sys=${pair%%:*} g=${pair##*:}
  python3 "$derive" --csv "$k/llama3.1_$g.csv" --csv "$k/gpt_oss_$g.csv" --peak 2500 \
    --fp8-peak 5000 --check "configs/systems/$sys.yaml" ||
    fail "configs/systems/$sys.yaml does not hold what $k/{llama3.1,gpt_oss}_$g.csv give"
done
python3 "$derive" --csv "$k/llama3.1_h200.csv" --peak 989 --fp8-peak 1979 \
  --check configs/systems/dgx-h100.yaml ||
  fail "configs/systems/dgx-h100.yaml does not hold what $k/llama3.1_h200.csv gives"
python3 "$derive" --csv "$k/llama3.1_h200.csv" --csv "$k/gpt_oss_h200.csv" --peak 989 \
  --fp8-peak 1979 --check configs/systems/dgx-h200.yaml ||
  fail "configs/systems/dgx-h200.yaml does not hold what $k/{llama3.1,gpt_oss}_h200.csv give"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A table edited by hand is caught (exit 1, naming the row).
sed 's/\[8192, 0.630\]/[8192, 0.700]/' configs/systems/gb200-nvl72.yaml > "$tmp/edited.yaml"
cmp -s configs/systems/gb200-nvl72.yaml "$tmp/edited.yaml" && fail "the edit did not apply"
set +e
python3 "$derive" --csv "$k/llama3.1_gb200.csv" --peak 2500 --check "$tmp/edited.yaml" 2> "$tmp/err"
rc=$?
set -e
[ "$rc" = 1 ] || fail "an edited table gave exit $rc, expected 1"
grep -q "fused_attention_efficiency.forward:" "$tmp/err" || fail "no row named: $(cat "$tmp/err")"
# A non-finite rate is refused where it is read (exit 2, file:line and field).
awk -F, 'BEGIN{OFS=","} NR==3{$16="nan"} {print}' tests/data/kernels/cudnn-sdpa/llama3.1_gb200.csv > "$tmp/bad.csv"
set +e
python3 "$derive" --csv "$tmp/bad.csv" --peak 2500 2> "$tmp/err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "a NaN rate gave exit $rc, expected 2"
grep -q "bad.csv:3: field 'tflops'" "$tmp/err" || fail "message: $(cat "$tmp/err")"
echo "attention tables: derived from the measurements they cite"
