#!/usr/bin/env bash
# Configures (does not build) every documented option combination of scalefit:
#   SCALEFIT_BUILD_BENCHMARKS ON/OFF x SCALEFIT_BUILD_TESTS ON/OFF x SCALEFIT_ENABLE_CUDA ON/OFF,
# and the main job's first build (SCALEFIT_QUICK_BUILD=ON, the rest OFF), each into its own
# throw-away build directory, and fails if any combination does not configure.
# CUDA=ON combinations are skipped (with a message) when no nvcc is found. Cheap: about 5-20 s
# per combination, no compilation. Part of CI (scripts/test.sh).
#
# Usage: scripts/check-configure.sh            Environment: CHECK_DIR (default: a mktemp dir)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v nvcc >/dev/null && [ -z "${CUDACXX:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
have_nvcc=false
{ command -v nvcc >/dev/null || [ -n "${CUDACXX:-}" ]; } && have_nvcc=true

root=${CHECK_DIR:-$(mktemp -d /tmp/scalefit-configure.XXXXXX)}
failed=()
# configure NAME CMAKE_ARGS...: configures one combination into $root/NAME, reports, removes it.
configure() {
  local name=$1 dir="$root/$1"
  shift
  if cmake -S . -B "$dir" "$@" >"$dir.log" 2>&1; then
    echo "check-configure: ok     $name"
  else
    echo "check-configure: FAILED $name (log below)"
    tail -n 30 "$dir.log"
    failed+=("$name")
  fi
  rm -rf "${dir:?}"
}
for cuda in OFF ON; do
  if [ "$cuda" = ON ] && ! $have_nvcc; then
    echo "check-configure: no nvcc: skipping SCALEFIT_ENABLE_CUDA=ON"
    continue
  fi
  for bm in ON OFF; do
    for tests in ON OFF; do
      configure "cuda-$cuda.benchmarks-$bm.tests-$tests" -DSCALEFIT_ENABLE_CUDA="$cuda" \
        -DSCALEFIT_BUILD_BENCHMARKS="$bm" -DSCALEFIT_BUILD_TESTS="$tests"
    done
  done
done
# The main job's first build (scripts/setup.sh without --all on a fresh machine).
configure quick-build.cuda-OFF.benchmarks-OFF.tests-OFF -DSCALEFIT_QUICK_BUILD=ON \
  -DSCALEFIT_ENABLE_CUDA=OFF -DSCALEFIT_BUILD_BENCHMARKS=OFF -DSCALEFIT_BUILD_TESTS=OFF
[ -z "${CHECK_DIR:-}" ] && rm -rf "$root"
if ((${#failed[@]})); then
  echo "check-configure: ${#failed[@]} combination(s) failed: ${failed[*]}" >&2
  exit 1
fi
echo "check-configure: every combination configures"
