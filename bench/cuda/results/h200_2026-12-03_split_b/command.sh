#!/usr/bin/env bash
# Second nvidia-h200 call of 2026-12-03 (eighteenth session): the split-row kernel with the CTA's
# threads (G) chosen apart from the CTAs per row (C); call split found G = 64 slow and tied G to C.
# Its GPU tests, then graph-replayed small launches (rows 1-64, issue 3's H, every dtype, plain and
# fused): the split never (the kernels before it), then forced to C = 2, 4, 8 x G = automatic
# (fewest vectors in <= 512 threads), 128, 256, in one run; then compute-sanitizer over the
# few-row test.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/split_b.tgz" r; }  # after every step: a call cut short keeps what ran
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 120 normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaSplitRow.*:RmsNormCudaArguments.*' \
  > "$R/gpu_tests.log" 2>&1
echo "tests rc=$?"; tail -3 "$R/gpu_tests.log"; pack
common=(--csv --dtypes bf16,fp16,fp32 --rows 1,8,16,32,64 --hidden 1024,3000,4096,5120,7168,8192,16384
        --modes plain,fused)
timeout 100 normd_kernel_bench "${common[@]}" --split 1 > "$R/never.csv" 2>&1
echo "bench never rc=$?"; pack
timeout 200 normd_kernel_bench "${common[@]}" --split 2,4,8 --threads 0,128,256 > "$R/forced.csv" 2>&1
echo "bench forced rc=$?"; pack
timeout 100 normd_kernel_bench "${common[@]}" --split 1 > "$R/never2.csv" 2>&1
echo "bench never again rc=$?"; pack
{
  timeout 90 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 normd_gpu_tests \
    --gtest_brief=1 --gtest_filter='RmsNormCudaSplitRow.EverySizeAtFewRows'; echo "memcheck rc=$?"
  timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests \
    --gtest_brief=1 --gtest_filter='RmsNormCudaSplitRow.EverySizeAtFewRows'; echo "racecheck rc=$?"
} > "$R/sanitizer.log" 2>&1
grep 'rc=\|ERROR SUMMARY\|RACECHECK SUMMARY' "$R/sanitizer.log"
pack && rm -rf "$R"
