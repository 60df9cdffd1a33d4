#!/usr/bin/env bash
# Built from commit 3f2759b (the launcher's fallback fixed after call push_c).
# Fifth nvidia-h200 call of the twentieth session (2026-12-03): the three long forced sweeps that
# call push_d left out (staged, lean and reload kernels' MatchesReference).
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/push_e.tgz" r; }
timeout 280 stdbuf -oL -eL normd_gpu_tests \
  --gtest_filter='RmsNormCudaStaged.MatchesReference:RmsNormCudaLean.MatchesReference:RmsNormCudaReload.MatchesReference' \
  > "$R/gpu_tests_rest.log" 2>&1
echo "tests rc=$?"; grep -a '^\[  PASSED\|^\[  FAILED\|tests ran' "$R/gpu_tests_rest.log" | tail -5
pack && rm -rf "$R"
