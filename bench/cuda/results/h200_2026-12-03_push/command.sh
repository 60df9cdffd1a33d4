#!/usr/bin/env bash
# Built from commit a00375c (the prototype RmsNormOptions::split_exchange and
# normd_kernel_bench --split-exchange).
# First nvidia-h200 call of the twentieth session (2026-12-03): the split-row kernel's CTAs as a
# cluster. Exchange 1 launches the unchanged split kernel in clusters of C (what a cluster launch
# costs, with and without PDL); exchange 2 is RmsNormSplitPushKernel (each CTA reads its share only
# and pushes its partial sum into the others' shared memory with st.async). Correctness first
# (the split tests, memcheck and racecheck over the new one), then the small-batch target
# shapes in three rounds, H 1024 (no bytes to save: the cluster's own cost), and a grid.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/push.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 150 stdbuf -oL -eL normd_gpu_tests --gtest_filter='RmsNormCudaSplitRow.*:RmsNormCudaArguments.*' \
  > "$R/split_tests.log" 2>&1
echo "split tests rc=$?"; grep -a 'PASSED\|FAILED\|Failure' "$R/split_tests.log" | head -20
timeout 120 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 normd_gpu_tests \
  --gtest_filter=RmsNormCudaSplitRow.ClusterExchangesMatchReference > "$R/memcheck.log" 2>&1
echo "memcheck rc=$?"; grep -a 'ERROR SUMMARY\|PASSED\|FAILED' "$R/memcheck.log"
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests \
  --gtest_filter=RmsNormCudaSplitRow.ClusterExchangesMatchReference > "$R/racecheck.log" 2>&1
echo "racecheck rc=$?"; grep -a 'RACECHECK SUMMARY\|PASSED\|FAILED' "$R/racecheck.log"
pack
for round in 1 2 3; do
  timeout 40 normd_kernel_bench --csv --dtypes bf16 --rows 1,8 --hidden 4096,7168 --modes plain,fused \
    --split 0 --split-exchange 0,1,2 > "$R/targets$round.csv" 2>&1
  echo "targets $round rc=$?"
done
timeout 40 normd_kernel_bench --csv --dtypes bf16 --rows 1,8 --hidden 1024 --modes plain,fused \
  --split 1,8 --split-exchange 0,1,2 > "$R/h1024.csv" 2>&1
echo "h1024 rc=$?"
pack
timeout 300 normd_kernel_bench --csv --dtypes bf16,fp32 --rows 1,4,8,16 \
  --hidden 4096,7168,16384 --modes plain,fused --split 0,2,4,8 --split-exchange 0,1,2 \
  > "$R/grid.csv" 2>&1
echo "grid rc=$?"; wc -l "$R/grid.csv"
pack && rm -rf "$R"
