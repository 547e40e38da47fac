#!/usr/bin/env bash
# Runs scalefit's whole test suite (GoogleTest units and mpirun integration tests via CTest),
# building first. Installs missing Debian packages when run as root (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# OpenMPI refuses to run as root unless told; tests also oversubscribe the 2-core CI machine.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure --no-tests=error -j "${JOBS:-2}"
