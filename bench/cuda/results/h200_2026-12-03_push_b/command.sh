#!/usr/bin/env bash
# Built from commit 99f8252 (the prototype with ChooseSplitPushShape: the push kernel for any H it
# can hold, with its own G and N over the share).
# Second nvidia-h200 call of the twentieth session (2026-12-03). Call push found the push kernel
# (RmsNormSplitPushKernel, split_exchange 2) 0.64-1.00 of the best no-communication split at 48
# shapes of 1-16 rows. Here: its tests and sanitizers; G at the target shapes; and the grid for
# an automatic rule: rows 1-128 x H 1024-65536 x bf16/fp32 x plain/fused, the library's current
# choice against the push kernel with C = 2, 4, 8.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/push_b.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 150 stdbuf -oL -eL normd_gpu_tests --gtest_filter='RmsNormCudaSplitRow.*:RmsNormCudaArguments.*' \
  > "$R/split_tests.log" 2>&1
echo "split tests rc=$?"; grep -a 'PASSED\|FAILED\|Failure' "$R/split_tests.log" | head -20
timeout 150 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 normd_gpu_tests \
  --gtest_filter=RmsNormCudaSplitRow.PushMatchesReference > "$R/memcheck.log" 2>&1
echo "memcheck rc=$?"; grep -a 'ERROR SUMMARY\|PASSED\|FAILED' "$R/memcheck.log"
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests \
  --gtest_filter=RmsNormCudaSplitRow.PushMatchesReference > "$R/racecheck.log" 2>&1
echo "racecheck rc=$?"; grep -a 'RACECHECK SUMMARY\|PASSED\|FAILED' "$R/racecheck.log"
pack
for round in 1 2; do
  timeout 40 normd_kernel_bench --csv --dtypes bf16 --rows 1,8 --hidden 4096,7168 --modes plain,fused \
    > "$R/g_auto$round.csv" 2>&1
  timeout 60 normd_kernel_bench --csv --dtypes bf16 --rows 1,8 --hidden 4096,7168 --modes plain,fused \
    --split 4,8 --split-exchange 2 --threads 0,32,64,128,256 > "$R/g_push$round.csv" 2>&1
  echo "g $round rc=$?"
done
pack
timeout 400 normd_kernel_bench --csv --dtypes bf16,fp32 --rows 1,2,4,8,16,32,64,128 \
  --hidden 1024,2048,4096,5120,7168,8192,12288,16384,32768,65536 --modes plain,fused \
  --split 0,2,4,8 --split-exchange 2 > "$R/grid.csv" 2>&1
echo "grid rc=$?"; wc -l "$R/grid.csv"
pack && rm -rf "$R"
