#!/usr/bin/env bash
# Built from the working tree after 4764bb9: v14's rule (fp32 rows with a residual from 16384 rows
# on the reload kernel: two vectors per thread at H 3000, four at 5120, 8192, 16384). Fifth
# nvidia-h200 call of the twenty-second session (2026-12-03): the reload and host-side tests and
# the new automatic-choice test; compare_kernels.py at fp32 fused rows 16384 and 65536 (the >= 4.2
# TB/s grid's fp32 fused points, and H 7168); shape_sweep.py A/B in the same run, the new automatic
# choice against the old one (reload=off gives the register or staged kernel v13 chose at H 5120,
# 8192, 16384; lean=on its choice at H 3000), 3 interleaved rounds; and at 4096 rows, whether the
# rule could start there.
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/v14.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 150 normd_gpu_tests --gtest_brief=1 \
  --gtest_filter='RmsNormCudaReload.EveryVariantAtFewRows:RmsNormCudaReload.AutomaticChoice*:RmsNormCudaArguments.*:RmsNormCuda.*:Hidden/RmsNormSweep.MatchesReference/H3000' \
  > "$R/gpu_tests.log" 2>&1; echo "tests rc=$?"; tail -3 "$R/gpu_tests.log"; pack
timeout 150 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so --dtypes fp32 \
  --modes fused --rows 16384,65536 --hidden 1024,3000,4096,5120,7168,8192,16384 --budget-s 120 \
  --csv "$R/compare.csv" > "$R/compare.log" 2>&1; echo "compare rc=$?"; tail -3 "$R/compare.log"; pack
SW="python3 bench/cuda/shape_sweep.py --lib .gpu/lib/libnormd_cuda_kernels.so --anchors compile --ceilings --rounds 3"
timeout 150 $SW --shapes fp32:fused:16384x3000,fp32:fused:65536x3000 --variants auto,lean=on \
  > "$R/ab_3000.txt" 2>&1; echo "ab 3000 rc=$?"
timeout 200 $SW --shapes fp32:fused:16384x5120,fp32:fused:16384x8192,fp32:fused:16384x16384,fp32:fused:65536x5120,fp32:fused:65536x8192,fp32:fused:65536x16384 \
  --variants auto,reload=off > "$R/ab_wide.txt" 2>&1; echo "ab wide rc=$?"; pack
timeout 100 $SW --shapes fp32:fused:4096x3000,fp32:fused:4096x5120,fp32:fused:4096x8192,fp32:fused:4096x16384,fp32:fused:16384x7168 \
  --variants auto,reload=on+n=2,reload=on+n=4 > "$R/rows4096.txt" 2>&1; echo "rows 4096 rc=$?"
cat "$R"/ab_3000.txt "$R"/ab_wide.txt "$R"/rows4096.txt | grep -v '^shape'
pack && rm -rf "$R"
