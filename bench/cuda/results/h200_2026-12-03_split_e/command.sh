#!/usr/bin/env bash
# Fourth nvidia-h200 call of the nineteenth session (2026-12-03): the session's final library (v11's
# split-row kernel; the split's fallback no longer keeps a forced threads_per_row). Every
# normd_gpu_tests test, with per-test times (split_d's run of the same tests was cut at 330 s);
# compute-sanitizer memcheck and racecheck over the split tests at few rows and the fallback test;
# the integration suite against normd --backend=cuda; the small-batch target shapes, three
# rounds.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/split_e.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 480 stdbuf -oL -eL normd_gpu_tests > "$R/gpu_tests.log" 2>&1
echo "tests rc=$?"; grep -a '^\[  PASSED\|^\[  FAILED\|tests ran' "$R/gpu_tests.log" | tail -5
pack
{
  timeout 60 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 normd_gpu_tests \
    --gtest_brief=1 --gtest_filter='RmsNormCudaSplitRow.EverySizeAtFewRows:RmsNormCudaSplitRow.FallsBackWhereItCannotRun'
  echo "memcheck rc=$?"
  timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests \
    --gtest_brief=1 --gtest_filter='RmsNormCudaSplitRow.EverySizeAtFewRows:RmsNormCudaSplitRow.FallsBackWhereItCannotRun'
  echo "racecheck rc=$?"
} > "$R/sanitizer.log" 2>&1
grep 'rc=\|ERROR SUMMARY\|RACECHECK SUMMARY' "$R/sanitizer.log"; pack
OUT=$R/integration STEPS=integration timeout 120 tests/gpu/run_server_h200.sh > "$R/integration.log" 2>&1
echo "integration rc=$?"; grep -a 'PASSED\|FAILED' "$R/integration.log" | tail -3; pack
for round in 1 2 3; do
  timeout 20 normd_kernel_bench --csv --dtypes bf16 --rows 1,8 --hidden 4096,7168 --modes plain,fused \
    --split 1,0 > "$R/targets$round.csv" 2>&1
  echo "targets $round rc=$?"
done
pack && rm -rf "$R"
