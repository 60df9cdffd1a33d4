#!/usr/bin/env bash
# ResponseWire with its protobuf fallback for tensors of 32 MiB and more (after the -g run showed
# 32 MiB requests slower with referenced outputs) against normd_before (2971960), on the H200,
# 2026-11-30: the integration suite against --backend=cuda, then normd_ab (each side against the same
# echo, in turn, two rounds). Run from the repository root with the bundle in .gpu; logs under $OUT/r.
set -uo pipefail
source .gpu/env.sh
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
NORMD_BINARY=$(command -v normd) NORMD_TEST_BACKEND=cuda timeout 240 normd_integration_test --gtest_brief=1 \
  > "$R/integration_cuda.log" 2>&1
echo "integration against --backend=cuda rc=$?"; tail -3 "$R/integration_cuda.log"
OUT=$R/wire STEPS=normd_ab DURATION=2s AB_ROUNDS=2 NORMD_A=$(command -v normd_before) NORMD_B=$(command -v normd) \
  AB_POINTS="1:1 64:1 64:1:residual 1024:1 1024:1:residual 4096:1 1:64" \
  timeout 400 tests/gpu/run_server_h200.sh > "$R/wire.log" 2>&1
tar czf "$OUT/r.tgz" -C /tmp r
grep -E "^== .*normd_ab|throughput target|server time|per launch" "$R/wire.log"
