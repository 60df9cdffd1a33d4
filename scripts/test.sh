#!/usr/bin/env bash
# Quick start, command 2: installs what is missing, builds every target once (the `ci` preset:
# Release, CUDA code compiled for sm_90a when nvcc is found) and runs every test with CTest.
# Tests that need a GPU skip, saying why, on a machine without one.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc)
cmake --preset ci
cmake --build --preset ci -j "$jobs"
ctest --preset ci -j "$jobs"
