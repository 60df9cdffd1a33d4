#!/usr/bin/env bash
# First nvidia-h200 call of 2026-12-03 (eighteenth session): the split-row kernel (each of C CTAs
# sums the whole row and stores 1/C of it, rmsnorm_split_row_kernel.cuh). Its GPU tests, then
# graph-replayed small launches (rows 1-128, issue 3's H, every dtype, plain and fused) with the
# split never (1), automatic (0) and forced to 2, 4, 8 CTAs, side by side in one run, then
# compute-sanitizer over the few-row test.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/split.tgz" r; }  # after every step: a call cut short keeps what ran
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 120 normd_gpu_tests --gtest_brief=1 \
  --gtest_filter='RmsNormCudaSplitRow.*:RmsNormCudaArguments.*:RmsNormCudaBatched.PdlChainInGraph:RmsNormCuda.InPlace' \
  > "$R/gpu_tests.log" 2>&1
echo "tests rc=$?"; tail -3 "$R/gpu_tests.log"; pack
timeout 240 normd_kernel_bench --csv --dtypes bf16,fp16,fp32 --rows 1,8,16,32,64,128 \
  --hidden 1024,3000,4096,5120,7168,8192,16384 --modes plain,fused --split 1,0,2,4,8 > "$R/small.csv" 2>&1
echo "bench rc=$?"; tail -2 "$R/small.csv"; pack
{
  timeout 90 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 normd_gpu_tests \
    --gtest_brief=1 --gtest_filter='RmsNormCudaSplitRow.EverySizeAtFewRows'; echo "memcheck rc=$?"
  timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests \
    --gtest_brief=1 --gtest_filter='RmsNormCudaSplitRow.EverySizeAtFewRows'; echo "racecheck rc=$?"
} > "$R/sanitizer.log" 2>&1
grep 'rc=\|ERROR SUMMARY\|RACECHECK SUMMARY' "$R/sanitizer.log"
pack && rm -rf "$R"
