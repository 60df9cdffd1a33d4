#!/usr/bin/env bash
# Same build as call v15. Fourth nvidia-h200 call of the twenty-third session (2026-12-04): in
# call v15 the whole normd_gpu_tests binary ran past its 240 s limit (no failure printed before
# it was stopped, but no summary either). Here the tests v15 added or touched, each timed: the
# warp-row kernel's, the host-side rules, and two forced-kernel tests on the moved helpers.
set -uo pipefail
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
F='RmsNormCudaWarpRow.*:RmsNormCudaArguments.*:RmsNormCudaReload.EveryVariantAtFewRows:RmsNormCudaStaged.InPlace'
timeout 200 normd_gpu_tests --gtest_filter="$F" > "$R/gpu_tests.log" 2>&1; echo "tests rc=$?"
grep -a '^\[       OK\|^\[  FAILED\|^\[  PASSED\|tests from.*ran\|Failure' "$R/gpu_tests.log"
tar -C "$OUT" -czf "$OUT/v15_tests.tgz" r && rm -rf "$R"
