#!/usr/bin/env bash
# Built from commit 3f2759b (the launcher's fallback fixed after call push_c).
# Fourth nvidia-h200 call of the twentieth session (2026-12-03): the final library. Every
# normd_gpu_tests test but the three long forced sweeps of kernels the push cannot reach (staged,
# lean, reload MatchesReference: call push_e); compute-sanitizer memcheck (leak check) over the push
# kernel's tests and those whose few-row launches the automatic choice gives to it or takes back
# from it (RmsNormCuda.*, RmsNormCudaBatched.*), racecheck over the push kernel's; the
# integration suite against normd --backend=cuda (where push_c's batched launches failed).
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/push_d.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 260 stdbuf -oL -eL normd_gpu_tests \
  --gtest_filter='-RmsNormCudaStaged.MatchesReference:RmsNormCudaLean.MatchesReference:RmsNormCudaReload.MatchesReference' \
  > "$R/gpu_tests.log" 2>&1
echo "tests rc=$?"; grep -a '^\[  PASSED\|^\[  FAILED\|tests ran' "$R/gpu_tests.log" | tail -8
pack
OUT=$R/integration STEPS=integration timeout 130 tests/gpu/run_server_h200.sh > "$R/integration.log" 2>&1
echo "integration rc=$?"; grep -a 'PASSED\|FAILED' "$R/integration.log" | tail -3; pack
{
  timeout 100 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 normd_gpu_tests \
    --gtest_brief=1 --gtest_filter='RmsNormCudaSplitPush.*:RmsNormCuda.*:RmsNormCudaBatched.*'
  echo "memcheck rc=$?"
  timeout 50 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests \
    --gtest_brief=1 --gtest_filter='RmsNormCudaSplitPush.*'
  echo "racecheck rc=$?"
} > "$R/sanitizer.log" 2>&1
grep -a 'rc=\|ERROR SUMMARY\|RACECHECK SUMMARY\|PASSED\|FAILED' "$R/sanitizer.log"
pack && rm -rf "$R"
