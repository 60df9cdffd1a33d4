#!/usr/bin/env bash
# One nvidia-h200 call (2026-11-30, third session), v7: the cluster kernel for launches of few
# rows and the weight prefetch for one-wave launches. All GPU tests; the small-row graph bench
# with the cluster kernel automatic / off / forced; the 1024-row bench with the prefetch on / off
# (bf16 1024 x 4096 plain five times); compute-sanitizer memcheck and racecheck on the tests that
# reach the cluster and lean kernels.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/v7.tgz" r; }  # after every step: a call cut short keeps what ran
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 240 normd_gpu_tests --gtest_brief=1 > "$R/gpu_tests.log" 2>&1
echo "tests rc=$?"; tail -3 "$R/gpu_tests.log"; pack
timeout 60 normd_kernel_bench --csv --rows 1,8 --hidden 4096,7168 --cluster 0,1 > "$R/small.csv" 2>&1
echo "small rc=$?"; pack
timeout 40 normd_kernel_bench --csv --dtypes bf16 --rows 1,8 --hidden 1024,3000,4096,7168,16384 \
  --cluster 1,2,4,8 > "$R/small_forced.csv" 2>&1
echo "small forced rc=$?"; pack
timeout 90 normd_kernel_bench --csv --rows 1024 --prefetch on,off > "$R/rows1024.csv" 2>&1
echo "rows1024 rc=$?"; pack
for i in 1 2 3 4 5; do
  timeout 15 normd_kernel_bench --csv --dtypes bf16 --modes plain --rows 1024 --hidden 4096 --prefetch on,off \
    | grep -v '^#\|^dtype' >> "$R/bf16_1024x4096_repeats.csv"
done
echo "repeats rc=$?"
cat "$R/bf16_1024x4096_repeats.csv"
san=RmsNormCudaCluster.*:RmsNormCudaBatched.PdlChainInGraph:RmsNormCuda.MisalignedPointers:RmsNormCudaBatched.MixedSegmentsInOneLaunch:RmsNormCuda.ZeroRowsGiveZero
timeout 130 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 normd_gpu_tests --gtest_brief=1 \
  --gtest_filter="$san" > "$R/memcheck_cluster.log" 2>&1
echo "memcheck cluster rc=$?"; tail -4 "$R/memcheck_cluster.log"; pack
timeout 70 compute-sanitizer --tool memcheck --error-exitcode 9 normd_gpu_tests --gtest_brief=1 \
  --gtest_filter='RmsNormCudaLean.*' > "$R/memcheck_lean.log" 2>&1
echo "memcheck lean rc=$?"; tail -4 "$R/memcheck_lean.log"; pack
timeout 80 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests --gtest_brief=1 \
  --gtest_filter='RmsNormCudaBatched.PdlChainInGraph:RmsNormCuda.ZeroRowsGiveZero:RmsNormCuda.MisalignedPointers' \
  > "$R/racecheck_cluster.log" 2>&1
echo "racecheck cluster rc=$?"; tail -4 "$R/racecheck_cluster.log"
pack && rm -rf "$R"
