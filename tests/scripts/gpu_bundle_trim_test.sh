#!/usr/bin/env bash
# scripts/gpu-bundle-trim.sh on a fake bundle in a temporary git checkout: it keeps what
# gpu-check runs (stripped), removes every other executable and the unpacked nccl-tests, and exits
# 0 under the 64 MiB limit; with 70 MiB in the bundle it exits 1; without .gpu/bin it exits 2.
# Usage: gpu_bundle_trim_test.sh SOURCE_DIR
set -u
src=$1
tmp=$(mktemp -d /tmp/scalefit_gpu_trim_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; echo "--- output:"; echo "$out"; exit 1; }
p=$tmp/proj
mkdir -p "$p/scripts" "$p/.gpu/bin" "$p/.gpu/nt" "$p/.gpu/root"
cp "$src/scripts/gpu-bundle-trim.sh" "$p/scripts/"
git -C "$p" init -q && git -C "$p" add scripts && git -C "$p" -c user.name=t -c user.email=t@t commit -qm t
for f in scalefit-bench test_gpu test_bench_integration replay_jsonl bm_estimator test_estimator; do
  cp /bin/true "$p/.gpu/bin/$f"
done
echo x >"$p/.gpu/nt/all_reduce_perf"

out=$(bash "$p/scripts/gpu-bundle-trim.sh" 2>&1); rc=$?
[ $rc -eq 0 ] || fail "a small bundle: exit $rc, expected 0"
for f in scalefit-bench test_gpu test_bench_integration; do
  [ -x "$p/.gpu/bin/$f" ] || fail "$f was removed"
done
for f in replay_jsonl bm_estimator test_estimator; do
  [ ! -e "$p/.gpu/bin/$f" ] || fail "$f was kept"
done
[ ! -e "$p/.gpu/nt" ] || fail ".gpu/nt was kept"
[[ $out == *"limit 64 MiB"* ]] || fail "no size line"

head -c $((70 << 20)) /dev/zero >"$p/.gpu/root/big"
out=$(bash "$p/scripts/gpu-bundle-trim.sh" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "a 70 MiB bundle: exit $rc, expected 1"
[[ $out == *"over the limit"* ]] || fail "no over-the-limit message"

rm -rf "$p/.gpu"
out=$(bash "$p/scripts/gpu-bundle-trim.sh" 2>&1); rc=$?
[ $rc -eq 2 ] || fail "no bundle: exit $rc, expected 2"
echo "gpu_bundle_trim_test: passed"
