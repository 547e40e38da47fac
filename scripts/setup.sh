#!/usr/bin/env bash
# scalefit set-up: installs the Debian packages scalefit builds with (when run as root; otherwise
# prints the apt-get command), then configures and builds into build/ (executables in build/bin/).
# Without --all only the main job's packages are installed; --all adds GoogleTest, Google
# Benchmark, clang/LLVM for the asan and fuzz presets, and slurm-wlm/munge for the real-Slurm test.
# CUDA and NCCL are used when nvcc is found (PATH, CUDACXX or /usr/local/cuda/bin/nvcc); for the
# main job alone (no --all) only when a GPU is also visible.
#
# Usage: scripts/setup.sh [--no-build] [--all] [-- extra cmake arguments]
#   Without --all only the two binaries the main job runs are built (scalefit, scalefit-bench):
#   a fresh machine reaches the main job in minutes; scripts/test.sh builds --all (tests,
#   benchmarks, the NCCL profiler plugin).
# Environment: BUILD_DIR (default build), JOBS (default nproc), SCALEFIT_ENABLE_CUDA=ON|OFF,
#   SCALEFIT_QUICK_BUILD=ON|OFF (default: ON for a first build without --all, OFF with --all).
set -euo pipefail
cd "$(dirname "$0")/.."
setup_started=$(date +%s)

build=true
all=false
extra=()
while (($#)); do
  case "$1" in
    --no-build) build=false ;;
    --all) all=true ;;
    --) shift; extra=("$@"); break ;;
    *) echo "setup: unknown argument '$1' (expected --no-build, --all or -- CMAKE_ARGS)" >&2; exit 2 ;;
  esac
  shift
done

# What the main job builds and runs with.
packages=(cmake g++ make ninja-build openmpi-bin libopenmpi-dev libeigen3-dev libyaml-cpp-dev libcli11-dev
          nlohmann-json3-dev libfmt-dev
          python3-matplotlib) # `scalefit report` draws its PNGs with it
# What only the tests, benchmarks and CI presets need (--all, scripts/test.sh): GoogleTest, Google
# Benchmark, and for the fuzz and asan presets clang 14 with its runtimes (libFuzzer, ASan,
# UBSan) and llvm-symbolizer. A first run (no --all) skips them: issue 18's five-minute first run.
test_packages=(libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev llvm)
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
$all && packages+=("${test_packages[@]}")
missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done
# Tests only, installed with --all when root (else that test skips): the real-Slurm test of the job
# scripts (ctest -L slurm) starts its own slurmctld, two slurmd and munged; the jobs do not need them.
if $all; then
  for p in slurm-wlm munge; do
    if ! installed "$p"; then
      if [ "$(id -u)" -eq 0 ]; then
        missing+=("$p")
      else
        echo "setup: $p not installed: the real-Slurm test (ctest -L slurm) will be skipped" >&2
      fi
    fi
  done
fi
# apt waits for the dpkg lock (the deferred install below may hold it) instead of failing.
apt_install="DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y --no-install-recommends"
# matplotlib (73 packages with Python on a bare Debian 12: 59 s of a first run's 88 s of packages,
# measured 2026-11-28 in a fresh debootstrap chroot) is needed only by `scalefit report`: when
# setup builds, it installs in the background while the build runs, and setup waits for it before
# it ends (issue 18's five-minute first run).
deferred=()
if $build && [ "$(id -u)" -eq 0 ]; then
  for i in "${!missing[@]}"; do
    if [ "${missing[$i]}" = python3-matplotlib ]; then
      deferred=(python3-matplotlib)
      unset 'missing[i]'
    fi
  done
  missing=("${missing[@]}")
fi
if ((${#missing[@]})) || ((${#deferred[@]})); then
  cmd="apt-get update && $apt_install ${missing[*]} ${deferred[*]}"
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update
    if ((${#missing[@]})); then
      echo "setup: installing ${missing[*]}"
      bash -c "$apt_install ${missing[*]}"
    fi
  else
    echo "setup: missing Debian packages: ${missing[*]}" >&2
    echo "setup: run as root:  sudo bash -c '$cmd'" >&2
    exit 1
  fi
fi

packages_done=$(date +%s)
$build || exit 0
BUILD_DIR=${BUILD_DIR:-build}
mkdir -p "$BUILD_DIR"
deferred_pid=
if ((${#deferred[@]})); then
  echo "setup: installing ${deferred[*]} in the background while building (log: $BUILD_DIR/apt-deferred.log)"
  # A lower CPU priority than the build's, not the lowest: the build keeps both cores busy to its
  # end (no idle lane in its ninja log), so at nice 19 apt got almost nothing until the build was
  # done and then ran alone on one core (a fresh first run, 2026-11-28: 45-50 s of setup after
  # the build). At nice 5 it gets about a quarter of a core beside two compile jobs and is done
  # with the build. Lowest I/O priority: the compilers read headers.
  nice -n 5 ionice -c 2 -n 7 bash -c "$apt_install ${deferred[*]}" >"$BUILD_DIR/apt-deferred.log" 2>&1 &
  deferred_pid=$!
fi
# When the first run started (scripts/main-job.sh prints the time from here to its report).
first_run=false
if [ ! -f "$BUILD_DIR/.first-run-start" ]; then
  echo "$setup_started" > "$BUILD_DIR/.first-run-start"
  first_run=true
fi

# nvcc outside PATH (the CUDA toolkit's default prefix) still enables the CUDA targets.
if ! command -v nvcc >/dev/null && [ -z "${CUDACXX:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
# The header-only cuDNN frontend (PyPI nvidia-cudnn-frontend; headers under include/) for the
# fused attention kernel, unpacked into .deps/cudnn-frontend (git-ignored) when CUDA is in use.
# Optional: without it the cublas engine runs attention unfused. Override with
# CUDNN_FRONTEND_HOME=DIR (a folder holding include/cudnn_frontend.h).
fetch_cudnn_frontend() {
  local dest=.deps/cudnn-frontend
  [ -f "$dest/include/cudnn_frontend.h" ] && return 0
  [ -n "${CUDNN_FRONTEND_HOME:-}" ] && return 0
  if ! python3 -m pip --version >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ]; then
      apt-get -o DPkg::Lock::Timeout=900 update && bash -c "$apt_install python3-pip"
    else
      echo "setup: python3 -m pip missing: fused attention on the GPU is not built" >&2
      return 0
    fi
  fi
  echo "setup: fetching the cuDNN frontend headers (pip: nvidia-cudnn-frontend) into $dest"
  # --target installs into a folder of ours (no system or user site-packages touched).
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$dest" \
    nvidia-cudnn-frontend ||
    echo "setup: could not fetch nvidia-cudnn-frontend: fused attention on the GPU is not built" >&2
}
have_nvcc=false
{ command -v nvcc >/dev/null || [ -n "${CUDACXX:-}" ]; } && have_nvcc=true
# The main job alone (no --all) on a machine where no GPU is visible runs only the CPU paths (MPI
# collectives, Eigen kernels): build its two binaries without CUDA, since the cuDNN attention,
# cuBLAS engine and NCCL backend are most of a fresh build's time there (issue 18's five-minute
# first run). --all (scripts/test.sh, CI) builds the CUDA targets whenever nvcc is found, also
# after such a build (the cached OFF is overridden). SCALEFIT_ENABLE_CUDA=ON|OFF decides always.
gpu_visible() { nvidia-smi -L >/dev/null 2>&1 || compgen -G '/dev/nvidia[0-9]*' >/dev/null; }
if [ -z "${SCALEFIT_ENABLE_CUDA:-}" ] && $have_nvcc; then
  if $all; then
    SCALEFIT_ENABLE_CUDA=ON
  elif ! gpu_visible; then
    SCALEFIT_ENABLE_CUDA=OFF
    echo "setup: nvcc found but no GPU visible: building the main job without CUDA" \
         "(SCALEFIT_ENABLE_CUDA=ON builds it; scripts/test.sh builds the CUDA targets)"
  fi
fi
if [ "${SCALEFIT_ENABLE_CUDA:-}" != OFF ] && $have_nvcc; then
  fetch_cudnn_frontend
fi

JOBS=${JOBS:-$(nproc)}
cuda_arg=()
[ -n "${SCALEFIT_ENABLE_CUDA:-}" ] && cuda_arg=(-DSCALEFIT_ENABLE_CUDA="$SCALEFIT_ENABLE_CUDA")
# Ninja for a new build directory: it compiles the sources of dependent targets side by side
# where make waits for each library (2 cores busy instead of 1.3 for the main job's build). An
# existing directory keeps the generator it was configured with.
# Without --all the tests and benchmarks are not configured when their packages are missing
# (a first run installs only the main job's); --all configures them always (also over such a build).
suite_arg=()
if $all; then
  suite_arg=(-DSCALEFIT_BUILD_TESTS=ON -DSCALEFIT_BUILD_BENCHMARKS=ON)
elif ! installed libgtest-dev || ! installed libbenchmark-dev; then
  suite_arg=(-DSCALEFIT_BUILD_TESTS=OFF -DSCALEFIT_BUILD_BENCHMARKS=OFF)
fi
# A first build for the main job compiles the stages no measured speed depends on at -O1
# (SCALEFIT_QUICK_BUILD in CMakeLists.txt: the estimator and the CPU kernels stay optimized):
# about 35 s less of a fresh 2-core first run. --all (the tests, the benchmarks, CI) builds
# everything at -O2, also over such a build. SCALEFIT_QUICK_BUILD=ON|OFF decides always.
quick_arg=()
if [ -n "${SCALEFIT_QUICK_BUILD:-}" ]; then
  quick_arg=(-DSCALEFIT_QUICK_BUILD="$SCALEFIT_QUICK_BUILD")
elif $all; then
  quick_arg=(-DSCALEFIT_QUICK_BUILD=OFF)
elif [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  quick_arg=(-DSCALEFIT_QUICK_BUILD=ON)
fi
gen_arg=()
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ] && [ -z "${CMAKE_GENERATOR:-}" ] && command -v ninja >/dev/null; then
  gen_arg=(-G Ninja)
fi
cmake -S . -B "$BUILD_DIR" "${gen_arg[@]}" -DCMAKE_BUILD_TYPE=Release "${cuda_arg[@]}" "${suite_arg[@]}" \
  "${quick_arg[@]}" "${extra[@]}"
if $all; then
  cmake --build "$BUILD_DIR" -j "$JOBS"
else
  cmake --build "$BUILD_DIR" -j "$JOBS" --target scalefit scalefit-bench
fi
echo "setup: built into $BUILD_DIR/bin: $(ls "$BUILD_DIR/bin" | tr '\n' ' ')"
built_at=$(date +%s)
if [ -n "$deferred_pid" ]; then
  if ! wait "$deferred_pid"; then
    tail -5 "$BUILD_DIR/apt-deferred.log" >&2
    echo "setup: installing ${deferred[*]} failed (above; $BUILD_DIR/apt-deferred.log)" >&2
    exit 1
  fi
  echo "setup: ${deferred[*]} installed ($(($(date +%s) - built_at)) s after the build)"
fi
# The first run's stages (scripts/main-job.sh prints them with its own): packages, configure+build.
if $first_run; then
  printf 'packages %d\nbuild %d\n' $((packages_done - setup_started)) $(($(date +%s) - packages_done)) \
    > "$BUILD_DIR/.first-run-stages"
fi
