#!/usr/bin/env bash
# Third nvidia-h200 call of the thirteenth session (2026-12-02). Logs under $OUT/t.tgz.
# .gpu: normd as HEAD 7011123; normbench with the window-pair median; normd-echo with --hold-us.
# What answering later, off gRPC's handler threads and in bursts, costs gRPC by itself (`hold` step):
# the echo answering from one holder thread after 1 and 450 us against the echo answering in the
# handler, 1x4096 bf16 at c=8, 64 and 256; then normd against the echo held 450 us (normd's server time
# per request at c=64 and 256 was 460-470 us in call s). Ten 1 s window pairs a point.
set -uo pipefail
source .gpu/env.sh
R=/tmp/t; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/t.tgz" -C /tmp t; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/hold STEPS=hold DURATION=10s HOLD_US="1 450" HOLD_POINTS="1:8 1:64 1:256" HOLD_NORMD_US=450 \
  HOLD_NORMBENCH_FLAGS="--stability=0 --summary-windows=0" \
  timeout 300 tests/gpu/run_server_h200.sh > "$R/hold.log" 2>&1
echo "hold rc=$?"; pack
grep -E "^== .*hold|target/baseline|^(target|baseline) " "$R/hold.log"
