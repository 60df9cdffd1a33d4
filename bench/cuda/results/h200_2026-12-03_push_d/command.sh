#!/usr/bin/env bash
# Built from commit 14f658b (the push kernel in the automatic choice).
# Fourth nvidia-h200 call of the twentieth session (2026-12-03): the rest of normd_gpu_tests (the
# forced staged, lean and reload sweeps, which call push_c left out); compute-sanitizer memcheck
# (leak check) over the push kernel's tests and the tests whose few-row launches the automatic
# choice now gives to it (RmsNormCuda.*, RmsNormCudaBatched.*), racecheck over the push kernel's.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/push_d.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
{
  timeout 100 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 normd_gpu_tests \
    --gtest_brief=1 --gtest_filter='RmsNormCudaSplitPush.*:RmsNormCuda.*:RmsNormCudaBatched.*'
  echo "memcheck rc=$?"
  timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests \
    --gtest_brief=1 --gtest_filter='RmsNormCudaSplitPush.*'
  echo "racecheck rc=$?"
} > "$R/sanitizer.log" 2>&1
grep -a 'rc=\|ERROR SUMMARY\|RACECHECK SUMMARY\|PASSED\|FAILED' "$R/sanitizer.log"; pack
timeout 300 stdbuf -oL -eL normd_gpu_tests \
  --gtest_filter='RmsNormCudaStaged.*:RmsNormCudaLean.*:RmsNormCudaReload.*' > "$R/gpu_tests_rest.log" 2>&1
echo "tests rc=$?"; grep -a '^\[  PASSED\|^\[  FAILED\|tests ran' "$R/gpu_tests_rest.log" | tail -5
pack && rm -rf "$R"
