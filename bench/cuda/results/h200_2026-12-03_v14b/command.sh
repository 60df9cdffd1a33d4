#!/usr/bin/env bash
# Built from the working tree after 4764bb9: v14's rule extended after call v14 (fp32 rows with a
# residual on the reload kernel from 4096 rows at H 3000, 5120 and 8192, and at H 7168 from 16384
# rows). Sixth nvidia-h200 call of the twenty-second session (2026-12-03): the reload, host-side,
# grid and automatic-choice tests; shape_sweep.py A/B of the new automatic choice against v13's
# (reload=off) at the extension's shapes, 3 interleaved rounds; compare_kernels.py at fp32 fused
# 4096 rows (every H of the grid).
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/v14b.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 150 normd_gpu_tests --gtest_brief=1 \
  --gtest_filter='RmsNormCudaReload.EveryVariantAtFewRows:RmsNormCudaReload.AutomaticChoice*:RmsNormCudaArguments.*:RmsNormCuda.*:Hidden/RmsNormSweep.MatchesReference/H3000' \
  > "$R/gpu_tests.log" 2>&1; echo "tests rc=$?"; tail -3 "$R/gpu_tests.log"; pack
SW="python3 bench/cuda/shape_sweep.py --lib .gpu/lib/libnormd_cuda_kernels.so --anchors compile --ceilings --rounds 3"
timeout 150 $SW --shapes fp32:fused:4096x3000,fp32:fused:4096x5120,fp32:fused:4096x8192,fp32:fused:16384x7168,fp32:fused:65536x7168 \
  --variants auto,reload=off > "$R/ab.txt" 2>&1; echo "ab rc=$?"; pack
timeout 120 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so --dtypes fp32 \
  --modes fused --rows 4096 --budget-s 90 --csv "$R/compare.csv" > "$R/compare.log" 2>&1
echo "compare rc=$?"; grep -v '^shape' "$R/ab.txt"; cut -c1-150 "$R/compare.log"
pack && rm -rf "$R"
