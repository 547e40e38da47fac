#!/bin/sh
# End to end: ingest the two H100 logs, `scalefit fit` them, `scalefit predict` from the fit file,
# and the loader's error exit on a malformed fit file. Usage: cli_fit_predict.sh SCALEFIT DATA_DIR
set -eu
S=$1
DATA=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$S" ingest nccl-tests -q "$DATA/nccl-tests/h100-hgx-xe9680_ib-8x400G_2node_16gpu_allreduce.txt" \
  --nnodes 2 --system h100 -o "$T/h100_2.jsonl"
"$S" ingest nccl-tests -q "$DATA/nccl-tests/h100-hgx-xe9680_ib-8x400G_4node_32gpu_allreduce.txt" \
  --nnodes 4 --system h100 -o "$T/h100_4.jsonl"
"$S" fit "$T" -o "$T/fit.yaml" > "$T/summary.txt"
cat "$T/summary.txt"
grep -q '^schema: scalefit.fit/2' "$T/fit.yaml" || fail "schema line"
[ "$(grep -c '^allreduce ' "$T/summary.txt")" -eq 4 ] || fail "expected 4 summary rows"
grep -q 'eff(2->4 nodes)' "$T/summary.txt" || fail "scaling efficiency line"

"$S" predict --fit "$T/fit.yaml" --op allreduce --nranks 16 --nnodes 2 --bytes 4,1M,64G --json > "$T/p.json"
cat "$T/p.json"
for key in '"bytes": 4,' '"bytes": 1048576,' '"bytes": 68719476736,' '"time_us"' '"algbw_gbps"' '"busbw_gbps"'; do
  grep -q "$key" "$T/p.json" || fail "predict --json lacks $key"
done
[ "$(grep -c '"extrapolated": true' "$T/p.json")" -eq 2 ] || fail "4 B and 64 GiB must be extrapolated"
[ "$(grep -c '"extrapolated": false' "$T/p.json")" -eq 1 ] || fail "1 MiB is measured"

"$S" predict --fit "$T/fit.yaml" --op allreduce --nranks 64 --nnodes 8 --bytes 256M > "$T/p8.txt"
cat "$T/p8.txt"
grep -q 'scaling trend from 2,4 nodes' "$T/p8.txt" || fail "8 nodes must use the scaling trend"

sed 's/^schema: scalefit.fit\/2/schema: scalefit.fit\/9/' "$T/fit.yaml" > "$T/bad.yaml"
rc=0
"$S" predict --fit "$T/bad.yaml" --op allreduce --nranks 16 --nnodes 2 --bytes 1M 2> "$T/err.txt" || rc=$?
cat "$T/err.txt"
[ "$rc" -eq 2 ] || fail "malformed fit file must exit 2, got $rc"
grep -q "bad.yaml:1: field 'schema'" "$T/err.txt" || fail "error must name file, line and field"
echo "cli_fit_predict: OK"
