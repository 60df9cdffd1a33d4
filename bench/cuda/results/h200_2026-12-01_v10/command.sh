#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, ninth session): v10's library (the 32-register build of four
# vectors per thread, the do_bench-chosen rules) -- all GPU tests, memcheck of every reload
# variant, and compare_kernels.py at the points whose kernel choice changed (plain fp32 grid rows
# >= 1024; plain 16-bit H 1024/5120/7168/8192; 16-bit fused H 1024/4096 at 1024 and 4096 rows).
# Logs under $OUT/v10.tgz.
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=/tmp/v10; rm -rf "$R"; mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$R/gpu.txt"
timeout 300 normd_gpu_tests --gtest_brief=1 > "$R/gpu_tests.log" 2>&1; echo "tests rc=$?"; tail -3 "$R/gpu_tests.log"
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 normd_gpu_tests --gtest_brief=1 \
  --gtest_filter='RmsNormCudaReload.EveryVariantAtFewRows' > "$R/sanitizer.log" 2>&1; echo "memcheck rc=$?"
C="python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so"
timeout 150 $C --dtypes fp32 --modes plain --rows 1024,4096,16384,65536 --csv "$R/compare_fp32.csv" > "$R/compare_fp32.log" 2>&1
echo "compare fp32 rc=$?"
timeout 130 $C --dtypes bf16,fp16 --modes plain --rows 1024,4096,16384,65536 --hidden 1024,5120,7168,8192 \
  --csv "$R/compare_16.csv" > "$R/compare_16.log" 2>&1; echo "compare 16 rc=$?"
timeout 60 $C --dtypes bf16,fp16 --modes fused --rows 1024,4096 --hidden 1024,4096 \
  --csv "$R/compare_fused.csv" > "$R/compare_fused.log" 2>&1; echo "compare fused rc=$?"
tar czf "$OUT/v10.tgz" -C /tmp v10
grep -h "fastest at\|MISMATCH" "$R"/compare_*.log
