#!/usr/bin/env bash
# Third nvidia-h200 call of the nineteenth session (2026-12-03): the split-row kernel's CTA size G
# at the small-batch shapes (bf16, rows 1 and 8, H 4096 and 7168, plain and fused; 20
# launches from one CUDA graph, L2-resident). The automatic rule's G is 256 (kSplitThreads) where
# 256 threads hold the row in <= 4 vectors; split_b compared only 128, 256 and the fewest vectors
# in 512. Here every whole-warp G from 128 to 512 in steps of 32 with C = 4 and 8, two rounds, and
# the automatic choice beside them. Also the split tests (FallsBackWhereItCannotRun now forces
# threads_per_row too).
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/split_g.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 120 stdbuf -oL -eL normd_gpu_tests --gtest_filter='RmsNormCudaSplitRow.*:RmsNormCudaArguments.*' \
  > "$R/split_tests.log" 2>&1
echo "split tests rc=$?"; grep -a 'PASSED\|FAILED\|Failure' "$R/split_tests.log" | head -20
pack
for round in 1 2; do
  timeout 120 normd_kernel_bench --csv --dtypes bf16 --rows 1,8 --hidden 4096,7168 --modes plain,fused \
    --split 4,8 --threads 128,160,192,224,256,288,320,352,384,416,448,480,512 > "$R/g$round.csv" 2>&1
  echo "g $round rc=$?"
  timeout 30 normd_kernel_bench --csv --dtypes bf16 --rows 1,8 --hidden 4096,7168 --modes plain,fused \
    > "$R/auto$round.csv" 2>&1
  echo "auto $round rc=$?"
  pack
done
rm -rf "$R"
