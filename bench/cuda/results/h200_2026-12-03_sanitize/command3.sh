#!/usr/bin/env bash
# Seventh nvidia-h200 call of the nineteenth session (2026-12-03): memcheck with leak checking over
# two of the four sweeps command2.sh left out (reload and cluster MatchesReference, 124 s of
# split_e's run), as far as the session's device time goes. Output in r3/.
source .gpu/env.sh
R=$OUT/r3; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/sanitize3.tgz" r3; }
timeout 230 stdbuf -oL -eL compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
  normd_gpu_tests --gtest_filter='RmsNormCudaReload.MatchesReference:RmsNormCudaCluster.MatchesReference' \
  > "$R/memcheck.log" 2>&1
echo "memcheck rc=$?"; grep -a '^\[       OK\|^\[  PASSED\|^\[  FAILED\|SUMMARY' "$R/memcheck.log"
pack && rm -rf "$R"
