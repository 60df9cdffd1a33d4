#!/usr/bin/env bash
# Built from commit f2d90a8. Fifth nvidia-h200 call of the twenty-first session (2026-12-03): the
# per-warp exchange as a template flag. Its tests, memcheck and racecheck first; then three
# libraries alternating over call warps' grid: A = ef80f58 (the CTA's sum pushed), W = call warps'
# library B (every block's warps push, a run-time count), H = f2d90a8 (per warp for one vector per
# thread in up to 128 threads at up to 32 rows, else A's code). A and W run normd_kernel_bench_a,
# built against their header; H its own. Then where the push starts to win under H (forced on
# against off, rows 1-32 of H 1024-4096), and clusters of 16 against 8 for few rows of H >= 16384.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/perwarp_b.tgz" r; }
A=$PWD/.gpu/lib_a; W=$PWD/.gpu/lib_w
{ LD_LIBRARY_PATH=$A:$LD_LIBRARY_PATH ldd "$(command -v normd_kernel_bench_a)" | grep normd_cuda
  LD_LIBRARY_PATH=$W:$LD_LIBRARY_PATH ldd "$(command -v normd_kernel_bench_a)" | grep normd_cuda
  ldd "$(command -v normd_kernel_bench)" | grep normd_cuda; md5sum .gpu/lib/libnormd_cuda* "$A"/* "$W"/*; } > "$R/libs.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 150 stdbuf -oL -eL normd_gpu_tests --gtest_filter='RmsNormCudaSplitPush.*:RmsNormCudaArguments.*' \
  > "$R/push_tests.log" 2>&1
echo "push tests rc=$?"; grep -a 'PASSED\|FAILED\|Failure' "$R/push_tests.log" | head -20
timeout 120 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 normd_gpu_tests \
  --gtest_filter='RmsNormCudaSplitPush.*' > "$R/memcheck.log" 2>&1
echo "memcheck rc=$?"; grep -a 'ERROR SUMMARY\|PASSED\|FAILED' "$R/memcheck.log"
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests \
  --gtest_filter='RmsNormCudaSplitPush.*' > "$R/racecheck.log" 2>&1
echo "racecheck rc=$?"; grep -a 'RACECHECK SUMMARY\|PASSED\|FAILED' "$R/racecheck.log"
pack
grid() { timeout 60 "$1" --csv --dtypes bf16,fp32 --rows 1,8,16,32,64,128 \
  --hidden 4096,7168,16384,65536 --modes plain,fused; }
for round in 1 2 3; do
  LD_LIBRARY_PATH=$A:$LD_LIBRARY_PATH grid normd_kernel_bench_a > "$R/grid_a$round.csv" 2>&1
  LD_LIBRARY_PATH=$W:$LD_LIBRARY_PATH grid normd_kernel_bench_a > "$R/grid_w$round.csv" 2>&1
  grid normd_kernel_bench > "$R/grid_h$round.csv" 2>&1; echo "grid round $round rc=$?"
  pack
done
for round in 1 2 3; do
  timeout 60 normd_kernel_bench --csv --dtypes bf16,fp32 --rows 1,4,8,16,32 \
    --hidden 1024,2048,3000,4096 --modes plain,fused --push on,off > "$R/small_h$round.csv" 2>&1
  echo "small h $round rc=$?"
done
pack
for round in 1 2 3; do
  timeout 60 normd_kernel_bench --csv --dtypes bf16,fp32 --rows 1,2,4,8,16 \
    --hidden 16384,32768,65536 --modes plain,fused --push on --split 8,16 > "$R/c16_$round.csv" 2>&1
  echo "c16 $round rc=$?"
done
pack && rm -rf "$R"
