#!/usr/bin/env bash
# First nvidia-h200 call of 2026-11-30's fourth session (normd f186757 + the c1 step's cuda_nopoll
# variant): every GPU test (after the shape choosers moved to kernel_shapes.cu); the integration suite
# against --backend=cuda (RequestWire, busy polling automatic); then one request at a time (c1 step,
# 3 s per point): normd's default CUDA flags (busy polling automatic: 1000 us on these 16 cores)
# against --busy-poll-us=0 and the CPU backend, each against the echo. Logs under $OUT/r (r.tgz).
set -uo pipefail
source .gpu/env.sh
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/r.tgz" -C /tmp r; }  # after every step: a call cut short keeps what ran
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
timeout 250 normd_gpu_tests --gtest_brief=1 > "$R/gpu_tests.log" 2>&1
echo "gpu tests rc=$?"; tail -3 "$R/gpu_tests.log"; pack
NORMD_BINARY=$(command -v normd) NORMD_TEST_BACKEND=cuda timeout 200 normd_integration_test --gtest_brief=1 \
  > "$R/integration_cuda.log" 2>&1
echo "integration against --backend=cuda rc=$?"; tail -3 "$R/integration_cuda.log"; pack
OUT=$R/c1 STEPS=c1 DURATION=3s C1_VARIANTS="cuda cuda_nopoll cpu" timeout 200 tests/gpu/run_server_h200.sh \
  > "$R/c1.log" 2>&1
echo "c1 rc=$?"; pack
grep -E "^== |^target|^baseline|throughput target|server time|per launch|CPU time|busy polling" "$R/c1.log" "$R"/c1/normd_c1_cuda.log
