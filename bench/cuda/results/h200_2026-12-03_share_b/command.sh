#!/usr/bin/env bash
# Built from commit 73a19d9 (the prototype and normd_kernel_bench --share-sums; both taken out in 71da7cd).
# Second nvidia-h200 call of the nineteenth session (2026-12-03): the shared-sum prototype again,
# its exchange rebuilt without fences or counters: one relaxed 64-bit store per CTA of {tag,
# partial} and relaxed polls of the C words (call share: counters with release/acquire took ~3 us).
# Its correctness test and the other split tests, compute-sanitizer memcheck over it; the issue's
# small-batch target shapes, three rounds; a grid of forced C over rows 1-32.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/share_b.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 120 stdbuf -oL -eL normd_gpu_tests --gtest_filter='RmsNormCudaSplitRow.*:RmsNormCudaArguments.*' \
  > "$R/split_tests.log" 2>&1
echo "split tests rc=$?"; grep -a 'PASSED\|FAILED\|Failure' "$R/split_tests.log" | head -20
timeout 90 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 normd_gpu_tests \
  --gtest_filter=RmsNormCudaSplitRow.SharedSumsMatchReference > "$R/memcheck.log" 2>&1
echo "memcheck rc=$?"; grep -a 'ERROR SUMMARY' "$R/memcheck.log"
pack
for round in 1 2 3; do
  timeout 30 normd_kernel_bench --csv --dtypes bf16 --rows 1,8 --hidden 4096,7168 --modes plain,fused \
    --split 0 --share-sums 0,1 > "$R/targets$round.csv" 2>&1
  echo "targets $round rc=$?"
done
pack
timeout 240 normd_kernel_bench --csv --dtypes bf16,fp32 --rows 1,4,8,16 \
  --hidden 4096,7168,16384 --modes plain,fused --split 0,2,4,8 --share-sums 0,1 \
  > "$R/grid.csv" 2>&1
echo "grid rc=$?"; wc -l "$R/grid.csv"
pack && rm -rf "$R"
