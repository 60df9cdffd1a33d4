#!/usr/bin/env bash
# Built from the working tree after 233aaf6 with v15: RmsNormWarpRowKernel as its own option
# (RmsNormOptions::WarpRow), taken automatically for 16-bit H 1024 from 1024 to 16384 rows with
# four rows per block; the test helpers moved to tests/gpu/single_segment_runs.cc. Third
# nvidia-h200 call of the twenty-third session (2026-12-04): every GPU test (the new warp-row
# tests and the forced-kernel tests on the moved helpers), compute-sanitizer on the warp-row
# kernel's instances, the rows-per-block choice under do_bench (5 interleaved rounds, the choice
# before v15 beside it as warp=off), and compare_kernels.py at H 1024 for rows 1024-65536.
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/v15.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 240 normd_gpu_tests --gtest_brief=1 > "$R/gpu_tests.log" 2>&1; echo "tests rc=$?"
grep -a '^\[  PASSED\|^\[  FAILED\|tests from.*ran' "$R/gpu_tests.log"; pack
F='RmsNormCudaWarpRow.EveryVariantAtFewRows'
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 normd_gpu_tests --gtest_filter="$F" \
  > "$R/memcheck.log" 2>&1; echo "memcheck rc=$?"; grep -a '^\[  PASSED\|^\[  FAILED\|SUMMARY' "$R/memcheck.log"
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests --gtest_filter="$F" \
  > "$R/racecheck.log" 2>&1; echo "racecheck rc=$?"; grep -a '^\[  PASSED\|^\[  FAILED\|SUMMARY' "$R/racecheck.log"
pack
timeout 150 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so --anchors frms,compile,triton \
  --rows 1024,4096,16384,65536 --hidden 1024 --budget-s 130 --csv "$R/compare.csv" > "$R/compare.log" 2>&1
echo "compare rc=$?"
cut -c1-150 "$R/compare.log"
pack && rm -rf "$R"
