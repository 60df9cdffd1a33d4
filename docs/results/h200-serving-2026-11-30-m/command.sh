#!/usr/bin/env bash
# Second nvidia-h200 call of 2026-11-30's fourth session: (1) normd_ab, normd before this session
# (3b0b944, normd_before) against this session's normd with busy polling off (f186757,
# --busy-poll-us=0), so that the difference is RequestWire's (the request's tensor bytes read from
# gRPC's slices), each against the same echo, in turn, two rounds of 2 s; (2) issue 8's grid with
# default flags (busy polling automatic, RequestWire) and --max-queue-bytes=4 GiB, 3 s per point.
# Logs under $OUT/s (s.tgz).
set -uo pipefail
source .gpu/env.sh
R=/tmp/s; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/s.tgz" -C /tmp s; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/ab STEPS=normd_ab DURATION=2s AB_ROUNDS=2 NORMD_A=$(command -v normd_before) NORMD_B=$(command -v normd) \
  AB_FLAGS_B=--busy-poll-us=0 AB_POINTS="64:1 64:1:residual 1024:1 1024:1:residual 4096:1" \
  timeout 230 tests/gpu/run_server_h200.sh > "$R/ab.log" 2>&1
echo "normd_ab rc=$?"; pack
OUT=$R/grid STEPS=serve DURATION=3s SERVE_FLAGS=--max-queue-bytes=4294967296 \
  SERVE_SHAPES="1:1,8,64,256 64:1,8,64,256 4096:1,8,64" timeout 330 tests/gpu/run_server_h200.sh > "$R/grid.log" 2>&1
echo "grid rc=$?"; pack
grep -E "^== .*normd_ab|throughput target|server time|per launch" "$R/ab.log"
grep -E "^== |throughput target|per launch" "$R/grid.log"
