#!/usr/bin/env bash
# Same build as call v15. Fifth nvidia-h200 call of the twenty-third session (2026-12-04): the
# rest of normd_gpu_tests (what call v15_tests did not run), without --gtest_brief so that a
# timeout still shows which tests passed.
set -uo pipefail
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
DONE='RmsNormCudaWarpRow.*:RmsNormCudaArguments.*:RmsNormCudaReload.EveryVariantAtFewRows:RmsNormCudaStaged.InPlace'
timeout 280 stdbuf -oL normd_gpu_tests --gtest_filter="-$DONE" > "$R/gpu_tests.log" 2>&1; echo "tests rc=$?"
grep -a '^\[       OK\|^\[  FAILED\|^\[  PASSED\|tests from.*ran\|Failure' "$R/gpu_tests.log" | tail -60
tar -C "$OUT" -czf "$OUT/v15_rest.tgz" r && rm -rf "$R"
