#!/usr/bin/env bash
# The long checks, too slow for every CI run (about 35 minutes more on 2 cores): everything
# scripts/test.sh --all does, plus the whole suite under ASan + UBSan (build/preset-fuzz, clang) and
# 10 minutes of each fuzz target instead of 30 s. Same exit status rules as scripts/test.sh.
# Environment: FUZZ_SECONDS (default 600), JOBS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS="configure slurm sanitize fuzz" FUZZ_SECONDS=${FUZZ_SECONDS:-600} bash scripts/test.sh --all
