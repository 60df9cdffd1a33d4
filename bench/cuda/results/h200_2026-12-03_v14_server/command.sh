#!/usr/bin/env bash
# Built from commit cf08870 (v14 with the kernel tables in kernel_instances.cuh). Eighth
# nvidia-h200 call of the twenty-second session (2026-12-03): the integration suite against the real
# normd --backend=cuda, and the automatic-choice and host-side GPU tests on this build.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/v14_server.tgz" r; }
timeout 40 normd_gpu_tests --gtest_brief=1 \
  --gtest_filter='RmsNormCudaReload.AutomaticChoice*:RmsNormCudaArguments.*:RmsNormCuda.*' > "$R/gpu_tests.log" 2>&1
echo "tests rc=$?"; tail -2 "$R/gpu_tests.log"; pack
OUT=$R/integration STEPS=integration timeout 120 tests/gpu/run_server_h200.sh > "$R/integration.log" 2>&1
echo "integration rc=$?"; grep -a 'PASSED\|FAILED' "$R/integration.log" | tail -3; pack
