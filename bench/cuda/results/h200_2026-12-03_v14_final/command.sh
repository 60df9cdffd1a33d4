#!/usr/bin/env bash
# Built from commit dc4322d (v14's final rule). Seventh nvidia-h200 call of the twenty-second
# session (2026-12-03): the reload, host-side, grid and automatic-choice tests on the final library,
# and compare_kernels.py over every fp32 fused point of rows 4096, 16384 and 65536.
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/v14_final.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 120 normd_gpu_tests --gtest_brief=1 \
  --gtest_filter='RmsNormCudaReload.EveryVariantAtFewRows:RmsNormCudaReload.AutomaticChoice*:RmsNormCudaArguments.*:RmsNormCuda.*:Hidden/RmsNormSweep.MatchesReference/H3000' \
  > "$R/gpu_tests.log" 2>&1; echo "tests rc=$?"; tail -3 "$R/gpu_tests.log"; pack
timeout 170 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so --dtypes fp32 \
  --modes fused --rows 4096,16384,65536 --budget-s 150 --csv "$R/compare.csv" > "$R/compare.log" 2>&1
echo "compare rc=$?"; cut -c1-150 "$R/compare.log"
pack && rm -rf "$R"
