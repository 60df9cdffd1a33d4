#!/usr/bin/env bash
# Fifth nvidia-h200 call (2026-11-30, third session), after the second read of the change: the
# two-pass kernel moved to its own file, the block sum shared by the lean and cluster kernels
# (BlockSumInWarp0; the cluster kernel's per-CTA sum now adds its warps as a tree, not in a row).
# The GPU tests that reach the cluster, lean and two-pass kernels and the shared-memory weights.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
timeout 230 normd_gpu_tests --gtest_brief=1 \
  --gtest_filter='RmsNormCudaCluster.*:RmsNormCudaLean.*:RmsNormCudaBatched.*:*RmsNormSweep*H4096:*RmsNormSweep*H65536:RmsNormCudaArguments.*' \
  > "$R/gpu_tests.log" 2>&1
echo "tests rc=$?"; tail -3 "$R/gpu_tests.log"
tar -C "$OUT" -czf "$OUT/v7e.tgz" r && rm -rf "$R"
