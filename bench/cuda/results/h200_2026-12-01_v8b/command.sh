#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, seventh session), v8 final: the reload kernel also for 16-bit
# rows of 16384 with a residual (instead of the staged kernel), its weights read per vector with a
# residual. (1) every GPU test; (2) compute-sanitizer memcheck and racecheck over every variant of
# the reload kernel (RmsNormCudaReload.EveryVariantAtFewRows); (3) the kernel bench, automatic
# choice against --reload off, 16-bit plain and fused rows, 1024-65536 rows, same run; (4) the
# comparison against the anchors for 16-bit fused rows >= 1024. Logs under $OUT/v8b.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/v8b; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/v8b.tgz" -C /tmp v8b; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$R/gpu.txt"
timeout 290 normd_gpu_tests --gtest_brief=1 > "$R/gpu_tests.log" 2>&1
echo "tests rc=$?"; tail -3 "$R/gpu_tests.log"; pack
{
  timeout 60 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 normd_gpu_tests --gtest_brief=1 \
    --gtest_filter='RmsNormCudaReload.EveryVariantAtFewRows'; echo "memcheck rc=$?"
  timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests --gtest_brief=1 \
    --gtest_filter='RmsNormCudaReload.EveryVariantAtFewRows'; echo "racecheck rc=$?"
} > "$R/sanitizer.log" 2>&1
grep -E "rc=|ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY" "$R/sanitizer.log"; pack
timeout 80 normd_kernel_bench --csv --dtypes bf16,fp16 --rows 1024,4096,16384,65536 --reload auto,off > "$R/bench.csv" 2>&1
echo "bench rc=$?"; pack
timeout 130 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so --dtypes bf16,fp16 \
  --modes fused --rows 1024,4096,16384,65536 --budget-s 120 --csv "$R/compare_fused.csv" > "$R/compare_fused.log" 2>&1
echo "compare rc=$?"; tail -2 "$R/compare_fused.log"; pack
