#!/usr/bin/env bash
# The session's GPU call (2026-11-30, issue 8 and 7): packing with streaming stores, and the malloc
# arena count, on the H200. Run from the repository root with the bundle in .gpu (normd_memcpy is normd
# built with server/staging_layout.cc as of 04c7832, plain memcpy into staging; normd packs with
# base/streaming_copy.h). Logs under $OUT/r.
set -uo pipefail
source .gpu/env.sh
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
timeout 120 normd_staging_bench > "$R/staging_bench.log" 2>&1
echo "staging bench rc=$?"
NORMD_BINARY=$(command -v normd) NORMD_TEST_BACKEND=cuda timeout 240 normd_integration_test --gtest_brief=1 \
  > "$R/integration_cuda.log" 2>&1
echo "integration against --backend=cuda rc=$?"; tail -3 "$R/integration_cuda.log"
OUT=$R/streaming STEPS=normd_ab DURATION=2s AB_ROUNDS=2 NORMD_A=$(command -v normd_memcpy) NORMD_B=$(command -v normd) \
  AB_POINTS="64:1 64:1:residual 64:8 16:1 1:1 1:64" timeout 300 tests/gpu/run_server_h200.sh > "$R/streaming.log" 2>&1
OUT=$R/arenas STEPS=normd_ab DURATION=2s AB_ROUNDS=2 AB_FLAGS_A=--malloc-arenas=4 AB_FLAGS_B=--malloc-arenas=1 \
  AB_POINTS="1:64 1:256 64:64" timeout 150 tests/gpu/run_server_h200.sh > "$R/arenas.log" 2>&1
tar czf "$OUT/r.tgz" -C /tmp r
cat "$R/staging_bench.log"
for f in streaming arenas; do echo "## $f"; grep -E "^== .*normd_ab|throughput target|server time|per launch" "$R/$f.log"; done

# Second call, 03:32 UTC, after normd_staging_bench's output check was corrected (the first call's
# "WRONG" came from the check, which expected every output near 1 while one input value per case is
# perturbed on purpose; staging_bench_first.log):
#   source .gpu/env.sh; R=/tmp/r2; mkdir -p $R; timeout 100 normd_staging_bench > $R/staging_bench.log 2>&1
#   OUT=$R/arenas42 STEPS=normd_ab DURATION=2s AB_ROUNDS=2 AB_FLAGS_A=--malloc-arenas=4 \
#     AB_FLAGS_B=--malloc-arenas=2 AB_POINTS="1:64 1:256 64:64" tests/gpu/run_server_h200.sh > $R/arenas42.log
