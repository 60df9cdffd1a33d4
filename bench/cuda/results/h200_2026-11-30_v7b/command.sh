#!/usr/bin/env bash
# Second nvidia-h200 call (2026-11-30, third session), v7 after the first call
# (../h200_2026-11-30_v7/): the weight prefetch removed (it slowed 1024 x 4096 bf16 from 6.0 to
# 8.2 us), the cluster kernel's automatic choice narrowed to rows that move >= 96 KB, the invalid
# shapes the first call's tests found mended. All GPU tests; the small-row graph bench with the
# cluster size automatic / none / 2 / 4 / 8 at H 4096-16384; the 1024 x 4096 bf16 shape sweep three
# times; compute-sanitizer memcheck (leak check) and racecheck on the tests that reach the cluster
# kernel.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/v7b.tgz" r; }  # after every step: a call cut short keeps what ran
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 240 normd_gpu_tests --gtest_brief=1 > "$R/gpu_tests.log" 2>&1
echo "tests rc=$?"; tail -3 "$R/gpu_tests.log"; pack
timeout 90 normd_kernel_bench --csv --rows 1,8 --hidden 4096,7168,8192,16384 --cluster 0,1,2,4,8 > "$R/small_clusters.csv" 2>&1
echo "small clusters rc=$?"; pack
for i in 1 2 3; do
  timeout 20 normd_kernel_bench --csv --sweep --dtypes bf16 --modes plain --rows 1024 --hidden 4096 \
    | grep -v '^#\|^dtype' >> "$R/bf16_1024x4096_sweep.csv"
done
echo "sweep rc=$?"; cat "$R/bf16_1024x4096_sweep.csv"; pack
timeout 150 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 normd_gpu_tests --gtest_brief=1 \
  --gtest_filter='RmsNormCudaCluster.*:RmsNormCudaBatched.PdlChainInGraph:RmsNormCudaBatched.MixedSegmentsInOneLaunch' \
  > "$R/memcheck_cluster.log" 2>&1
echo "memcheck cluster rc=$?"; tail -4 "$R/memcheck_cluster.log"; pack
timeout 90 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests --gtest_brief=1 \
  --gtest_filter='RmsNormCudaBatched.PdlChainInGraph:RmsNormCudaBatched.MixedSegmentsInOneLaunch' \
  > "$R/racecheck_cluster.log" 2>&1
echo "racecheck cluster rc=$?"; tail -4 "$R/racecheck_cluster.log"
pack && rm -rf "$R"
