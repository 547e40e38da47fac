#!/usr/bin/env bash
# gpu-bundle-trim.sh: fits a GPU bundle (.gpu/ from ../shared/tools/gpu-bundle.sh) into the
# device tool's 64 MiB carry limit, keeping what scripts/gpu-check.sh runs. On 2026-11-28 the
# bundle was 79 MiB: every executable of the build (57 MiB, unstripped) and nccl-tests unpacked
# beside its tarball (29 MiB, unpacked again by env.sh on the GPU machine).
# Keeps scalefit, scalefit-bench, the NCCL profiler plugin, test_gpu and the suite binaries
# gpu-check runs with the GPU visible, stripped (symbols only: the plugin keeps its dynamic
# exports): 44 MiB. test_bench_units and test_bench_gpu_path (CPU-only logic; they passed with
# the GPU visible on 2026-11-28) would make it 52. Removes .gpu/nt. Prints the bundle's size and
# the tree's, and exits 1 when the two exceed 64 MiB.
# Usage: scripts/gpu-bundle-trim.sh [BUNDLE_DIR]   (default .gpu)
set -euo pipefail
cd "$(dirname "$0")/.."
g=${1:-.gpu}
[ -d "$g/bin" ] || { echo "gpu-bundle-trim: no $g/bin (run ../shared/tools/gpu-bundle.sh first)" >&2; exit 2; }
keep=" scalefit scalefit-bench scalefit-nccl-profiler test_gpu test_bench_nccl_profiler test_kernels \
test_bench_integration test_exit_codes test_check test_cli_inputs "
for f in "$g"/bin/*; do
  case "$keep" in *" $(basename "$f") "*) strip --strip-unneeded "$f" 2>/dev/null || true ;; *) rm -f "$f" ;; esac
done
rm -rf "$g/nt"
bundle=$(du -sm "$g" | cut -f1)
tree=$(git ls-files -z | du -cm --files0-from=- 2>/dev/null | tail -1 | cut -f1)
echo "gpu-bundle-trim: $g $bundle MiB, tracked tree $tree MiB (limit 64 MiB together)"
[ $((bundle + tree)) -le 64 ] || { echo "gpu-bundle-trim: over the limit" >&2; exit 1; }
