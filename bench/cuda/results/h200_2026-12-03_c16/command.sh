#!/usr/bin/env bash
# Built from commit 3e5f2a5. First nvidia-h200 call of the twenty-first session (2026-12-03): the
# push kernel in clusters of 16 CTAs (non-portable). Correctness first (the push and argument
# tests, now with C = 16; memcheck and racecheck over the forced push sweep), then the issue's
# small-batch target shapes in three rounds (automatic, and the push forced with C = 8 and 16), a
# grid of few long rows, and 1024 x 4096 with the push forced at C = 2 and 4.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/c16.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 150 stdbuf -oL -eL normd_gpu_tests --gtest_filter='RmsNormCudaSplitPush.*:RmsNormCudaArguments.*' \
  > "$R/push_tests.log" 2>&1
echo "push tests rc=$?"; grep -a 'PASSED\|FAILED\|Failure' "$R/push_tests.log" | head -20
pack
timeout 120 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 normd_gpu_tests \
  --gtest_filter='RmsNormCudaSplitPush.*' > "$R/memcheck.log" 2>&1
echo "memcheck rc=$?"; grep -a 'ERROR SUMMARY\|PASSED\|FAILED' "$R/memcheck.log"
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests \
  --gtest_filter='RmsNormCudaSplitPush.*' > "$R/racecheck.log" 2>&1
echo "racecheck rc=$?"; grep -a 'RACECHECK SUMMARY\|PASSED\|FAILED' "$R/racecheck.log"
pack
for round in 1 2 3; do
  timeout 30 normd_kernel_bench --csv --dtypes bf16 --rows 1,8 --hidden 4096,7168 --modes plain,fused \
    --push auto > "$R/targets_auto$round.csv" 2>&1
  timeout 30 normd_kernel_bench --csv --dtypes bf16 --rows 1,8 --hidden 4096,7168 --modes plain,fused \
    --push on --split 8,16 > "$R/targets_on$round.csv" 2>&1
  echo "targets $round rc=$?"
done
pack
timeout 200 normd_kernel_bench --csv --dtypes bf16,fp32 --rows 1,4,8,16 \
  --hidden 4096,7168,16384,65536 --modes plain,fused --push on --split 8,16 > "$R/grid_on.csv" 2>&1
echo "grid on rc=$?"; wc -l "$R/grid_on.csv"
timeout 100 normd_kernel_bench --csv --dtypes bf16,fp32 --rows 1,4,8,16 \
  --hidden 4096,7168,16384,65536 --modes plain,fused --push auto > "$R/grid_auto.csv" 2>&1
echo "grid auto rc=$?"; wc -l "$R/grid_auto.csv"
pack
timeout 60 normd_kernel_bench --csv --dtypes bf16 --rows 1024 --hidden 4096 --modes plain,fused \
  --push on --split 2,4 > "$R/r1024_on.csv" 2>&1
timeout 60 normd_kernel_bench --csv --dtypes bf16 --rows 1024 --hidden 4096 --modes plain,fused \
  --push auto > "$R/r1024_auto.csv" 2>&1
echo "r1024 rc=$?"
pack && rm -rf "$R"
