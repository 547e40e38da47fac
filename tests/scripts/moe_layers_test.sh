#!/usr/bin/env bash
# scripts/validate_moe_layers.py: Megatron-LM's measured H100 MoE layers priced within their recorded
# errors, and bad input refused where it is read (exit 2 naming the file and field).
# Usage: moe_layers_test.sh SOURCE_ROOT SCALEFIT
set -euo pipefail
root=$1 sf=$2
cd "$root"
v=scripts/validate_moe_layers.py d=tests/data/moe-layers
fail() { echo "FAIL: $*" >&2; exit 1; }
python3 "$v" --scalefit "$sf" --data "$d" --bound-bf16-alltoall 0.22 --bound-any 0.31 > /dev/null ||
  fail "a layer beyond its recorded error (run $v)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$d"/*.yaml "$tmp"/
bad() { # $1 JSON text, $2 expected message fragment
  printf '%s' "$1" > "$tmp/megatron-lm-moe-perf-h100.json"
  set +e
  python3 "$v" --scalefit "$sf" --data "$tmp" > /dev/null 2> "$tmp/err"
  local rc=$?
  set -e
  [ "$rc" = 2 ] || fail "exit $rc for $1, expected 2"
  grep -q -- "$2" "$tmp/err" || fail "message for $1: $(cat "$tmp/err")"
}
bad '{"mixtral_a2a_tp1ep8_bf16": {"forward_ms": NaN, "backward_ms": 7.6}}' "field 'mixtral_a2a_tp1ep8_bf16.forward_ms'"
bad '{"mixtral_a2a_tp1ep8_bf16": {"forward_ms": 4.3, "backward_ms": -1}}' "backward_ms"
bad '{"mixtral_a2a_tp2ep4_bf16": {"forward_ms": 4.3, "backward_ms": 7.6}}' "not MODEL_DISPATCHER_tp1ep8_PRECISION"
bad '{"mixtral_a2a_tp1ep8_bf16": {"forward_ms": 4.3,' "megatron-lm-moe-perf-h100.json:1"
# a bound the recorded errors exceed: exit 1 naming the layer
set +e
python3 "$v" --scalefit "$sf" --data "$d" --bound-any 0.05 > /dev/null 2> "$tmp/err"
rc=$?
set -e
[ "$rc" = 1 ] || fail "a 5% bound gave exit $rc, expected 1"
grep -q "beyond its bound" "$tmp/err" || fail "no layer named: $(cat "$tmp/err")"
echo "moe layers: within their recorded errors; bad input refused"
