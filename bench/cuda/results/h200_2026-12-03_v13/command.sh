#!/usr/bin/env bash
# Built from commit 108efe0 (v13: per-warp pushes, the push from 10 KB rows up to 16 rows, clusters
# of 16). Sixth nvidia-h200 call of the twenty-first session (2026-12-03): the final library. Every
# normd_gpu_tests test but the three long forced sweeps of kernels v13 does not touch (staged, lean,
# reload MatchesReference); the small-batch targets (three rounds, push off beside); the
# integration suite against normd --backend=cuda; memcheck over the push, RmsNormCuda.* and batched
# tests, racecheck over the push's; then the rule against library A (ef80f58, before v13; its
# benchmark binary normd_kernel_bench_a) in two rounds.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/v13.tgz" r; }
A=$PWD/.gpu/lib_a
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 220 stdbuf -oL -eL normd_gpu_tests \
  --gtest_filter='-RmsNormCudaStaged.MatchesReference:RmsNormCudaLean.MatchesReference:RmsNormCudaReload.MatchesReference' \
  > "$R/gpu_tests.log" 2>&1
echo "tests rc=$?"; grep -a '^\[  PASSED\|^\[  FAILED\|tests ran' "$R/gpu_tests.log" | tail -8
pack
for round in 1 2 3; do
  timeout 20 normd_kernel_bench --csv --dtypes bf16 --rows 1,8 --hidden 4096,7168 --modes plain,fused \
    --push auto,off > "$R/targets$round.csv" 2>&1
  echo "targets $round rc=$?"
done
pack
OUT=$R/integration STEPS=integration timeout 130 tests/gpu/run_server_h200.sh > "$R/integration.log" 2>&1
echo "integration rc=$?"; grep -a 'PASSED\|FAILED' "$R/integration.log" | tail -3; pack
{
  timeout 100 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 normd_gpu_tests \
    --gtest_brief=1 --gtest_filter='RmsNormCudaSplitPush.*:RmsNormCuda.*:RmsNormCudaBatched.*'
  echo "memcheck rc=$?"
  timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests \
    --gtest_brief=1 --gtest_filter='RmsNormCudaSplitPush.*'
  echo "racecheck rc=$?"
} > "$R/sanitizer.log" 2>&1
grep -a 'rc=\|ERROR SUMMARY\|RACECHECK SUMMARY\|PASSED\|FAILED' "$R/sanitizer.log"
pack
grid() { timeout 40 "$1" --csv --dtypes bf16,fp32 --rows 1,2,4,8,16,32,64,128 \
  --hidden 1024,2048,3000,4096,7168,16384,32768,65536 --modes plain,fused; }
for round in 1 2; do
  LD_LIBRARY_PATH=$A:$LD_LIBRARY_PATH grid normd_kernel_bench_a > "$R/grid_a$round.csv" 2>&1
  grid normd_kernel_bench > "$R/grid_v13_$round.csv" 2>&1; echo "grid round $round rc=$?"
  pack
done
pack && rm -rf "$R"
