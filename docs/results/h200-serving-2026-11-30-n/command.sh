#!/usr/bin/env bash
# Third nvidia-h200 call of 2026-11-30's fourth session, same bundle as -l and -m (normd f186757):
# issue 8's grid again with default flags (busy polling automatic, RequestWire), 4 s per point as in
# the -i run before these changes, --max-queue-bytes=4 GiB; then the stages step (32 MiB requests at
# c=8: device time against the host link; 1-row requests at c=64 with 1 and 2 workers).
# Logs under $OUT/t (t.tgz).
set -uo pipefail
source .gpu/env.sh
R=/tmp/t; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/t.tgz" -C /tmp t; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/grid STEPS=serve DURATION=4s SERVE_FLAGS=--max-queue-bytes=4294967296 \
  SERVE_SHAPES="1:1,8,64,256 64:1,8,64,256 4096:1,8,64" timeout 400 tests/gpu/run_server_h200.sh > "$R/grid.log" 2>&1
echo "grid rc=$?"; pack
OUT=$R/stages STEPS=stages timeout 120 tests/gpu/run_server_h200.sh > "$R/stages.log" 2>&1
echo "stages rc=$?"; pack
grep -E "^== |throughput target|per launch" "$R/grid.log"
cat "$R/stages.log"
