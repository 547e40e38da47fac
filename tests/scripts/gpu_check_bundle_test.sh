#!/usr/bin/env bash
# scripts/gpu-check.sh from a GPU bundle (../shared/tools/gpu-bundle.sh), as far as it goes
# without a GPU: a fake bundle in a temp dir (scripts/, configs/, .gpu/bin with the built
# scalefit-bench and test_gpu, .gpu/root/usr/bin/mpirun.openmpi, .gpu/env.sh; no mpirun of its
# own, nothing to build with). --dry-run with no other argument must pass and name the bundle's
# binaries, launcher and paths; with a binary, a library or the launcher missing it must exit 2
# naming it; the plain run must exit 77 (no GPU) without building anything.
# Usage: gpu_check_bundle_test.sh SOURCE_DIR SCALEFIT_BENCH TEST_GPU
set -u
src=$1 bench=$2 test_gpu=$3
tmp=$(mktemp -d /tmp/scalefit_gpu_bundle_XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; echo "--- output:"; echo "$out"; exit 1; }
root=$tmp/proj g=$tmp/proj/.gpu
mkdir -p "$root/scripts" "$g/bin" "$g/root/usr/bin"
cp "$src/scripts/gpu-check.sh" "$root/scripts/"
ln -s "$src/configs" "$root/configs"
ln -s "$bench" "$g/bin/scalefit-bench"
ln -s "$test_gpu" "$g/bin/test_gpu"
launcher=$(command -v mpirun.openmpi || command -v orterun || command -v mpirun) ||
  { echo "no Open MPI launcher here to stand for the bundle's"; exit 1; }
ln -s "$launcher" "$g/root/usr/bin/mpirun.openmpi"
cat >"$g/env.sh" <<'ENV'
G=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export PATH=$G/root/usr/bin:$G/bin:$PATH SCALEFIT_FAKE_BUNDLE_ENV=1
ENV
dry() { out=$(cd "$tmp" && env -u BIN_DIR -u MPIRUN -u BUILD_DIR "$@" bash "$root/scripts/gpu-check.sh" --dry-run 2>&1); rc=$?; }

# 1. A whole bundle: ready; every path from the bundle, the launcher its mpirun.openmpi.
dry
[ "$rc" -eq 0 ] || fail "dry run of a whole bundle exited $rc (want 0)"
for want in "GPU bundle (.gpu/): nothing is built" "ok      binary: .gpu/bin/scalefit-bench" \
            "ok      binary: .gpu/bin/test_gpu" "ok      launcher: $g/root/usr/bin/mpirun.openmpi" \
            "SCALEFIT_BIN_DIR=$g/bin " "SCALEFIT_SOURCE_DIR=$root" \
            "SCALEFIT_MPIEXEC=$g/root/usr/bin/mpirun.openmpi" "gpu-check --dry-run: ready"; do
  grep -qF -- "$want" <<<"$out" || fail "dry run output lacks '$want'"
done
grep -q "/usr/bin/mpiexec" <<<"$out" && fail "dry run names the compiled /usr/bin/mpiexec"

# 2. No argument, no GPU: exit 77, and nothing built (no build folder, no cmake run).
if ! { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; }; then
  out=$(cd "$tmp" && env -u BIN_DIR -u MPIRUN bash "$root/scripts/gpu-check.sh" 2>&1); rc=$?
  [ "$rc" -eq 77 ] || fail "plain run without a GPU exited $rc (want 77)"
  [ -e "$root/build-gpu" ] && fail "plain run from a bundle created build-gpu"
fi

# 3. A binary missing: exit 2 naming it.
rm "$g/bin/test_gpu"
dry
[ "$rc" -eq 2 ] || fail "dry run without test_gpu exited $rc (want 2)"
grep -q "MISSING binary: .gpu/bin/test_gpu" <<<"$out" || fail "dry run does not name test_gpu"
ln -s "$test_gpu" "$g/bin/test_gpu"

# 4. A shared library missing (ldd: not found): exit 2 naming the library and the binary.
if command -v cc >/dev/null 2>&1; then
  mkdir -p "$tmp/lib"
  echo 'int sf_gone(void) { return 0; }' >"$tmp/lib/gone.c"
  echo 'int sf_gone(void); int main(void) { return sf_gone(); }' >"$tmp/lib/main.c"
  if cc -shared -fPIC -o "$tmp/lib/libsfgone.so" "$tmp/lib/gone.c" &&
     cc -o "$tmp/lib/test_gpu" "$tmp/lib/main.c" -L"$tmp/lib" -lsfgone; then
    rm "$tmp/lib/libsfgone.so" "$g/bin/test_gpu"
    cp "$tmp/lib/test_gpu" "$g/bin/test_gpu"
    dry
    [ "$rc" -eq 2 ] || fail "dry run with a missing library exited $rc (want 2)"
    grep -q "MISSING binary: .gpu/bin/test_gpu needs libsfgone.so" <<<"$out" ||
      fail "dry run does not name the missing libsfgone.so"
    rm "$g/bin/test_gpu"
    ln -s "$test_gpu" "$g/bin/test_gpu"
  fi
fi

# 5. The launcher missing (MPIRUN names none): exit 2 naming it.
dry MPIRUN=/nonexistent/mpirun.openmpi
[ "$rc" -eq 2 ] || fail "dry run with a missing launcher exited $rc (want 2)"
grep -q "MISSING launcher: /nonexistent/mpirun.openmpi" <<<"$out" || fail "dry run does not name the launcher"

# 6. A model file missing (configs/ not carried): exit 2 naming it.
rm "$root/configs"
dry
[ "$rc" -eq 2 ] || fail "dry run without configs/ exited $rc (want 2)"
grep -q "MISSING model (kernels): .*configs/models/gpt-2.7b.yaml" <<<"$out" || fail "dry run does not name the model"
echo "gpu-check bundle route: dry run and no-GPU run as expected"
