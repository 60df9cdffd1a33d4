#!/usr/bin/env bash
# Eighth nvidia-h200 call of the nineteenth session (2026-12-03): memcheck with leak checking over
# the last two sweeps command2.sh left out (staged and lean MatchesReference, 141 s of
# split_e's run), as far as the session's device time goes. Output in r4/.
source .gpu/env.sh
R=$OUT/r4; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/sanitize4.tgz" r4; }
timeout 200 stdbuf -oL -eL compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
  normd_gpu_tests --gtest_filter='RmsNormCudaStaged.MatchesReference:RmsNormCudaLean.MatchesReference' \
  > "$R/memcheck.log" 2>&1
echo "memcheck rc=$?"; grep -a '^\[       OK\|^\[  PASSED\|^\[  FAILED\|SUMMARY' "$R/memcheck.log"
pack && rm -rf "$R"
