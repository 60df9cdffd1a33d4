#!/usr/bin/env bash
# Fifth nvidia-h200 call of 2026-12-01 (sixth session), same bundle as call d (final code, default
# flags): (1) the c1 step, one request at a time, 3 s per point, with normd's CPU time over each point:
# defaults (4 copy threads polling 1 ms) against --copy-spin-us=0 (copy threads sleep between
# launches) and --copy-threads=1 (the launch's copies on one thread); (2) a second run of the grid's
# c=1 points and of the points the call-d grid had under 0.9 (serve step, 3 s per point).
# Logs under $OUT/e.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/e; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/e.tgz" -C /tmp e; }
run=tests/gpu/run_server_h200.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/c1 STEPS=c1 C1_VARIANTS="cuda cuda_copyspin0 cuda_copy1" DURATION=3s timeout 120 $run > "$R/c1.log" 2>&1
echo "c1 rc=$?"; pack
OUT=$R/grid STEPS=serve DURATION=3s SERVE_FLAGS=--max-queue-bytes=4294967296 \
  SERVE_SHAPES="1:1,64 64:1,256" timeout 150 $run > "$R/grid.log" 2>&1
echo "grid rc=$?"; pack
grep -E "^== |^target|^baseline|CPU time|per launch:|server time" "$R/c1.log"
awk '/^== .*normbench/{n=$NF} /throughput target\/baseline/{r=$NF} /requests per launch/{print n, "ratio", r, "rpl", $NF}' "$R/grid.log"
