#!/usr/bin/env bash
# Third nvidia-h200 call of the sixteenth session (2026-12-02). Logs under $OUT/zc.tgz.
# .gpu: as calls z and zb. Call zb's time limits were too short for its 32 MiB points: its first step
# was cut during 4096x4096 + residual c=8, and the normd it left draining held the metrics port, so
# the c=64 step's normd did not start (every target call UNAVAILABLE). This call re-runs what was lost,
# each step with room to finish and every server stopped before the next step starts.
#  1. 4096x4096 bf16 + residual, c=8, against the echo, 2 s window pairs (four).
#  2. 4096x4096 plain and + residual, c=64, 6 s window pairs (three).
#  3. 4096x4096 plain c=256, 20 s window pairs (two) after 10 s of load, --max-queue-bytes=20 GiB,
#     each window's figures in a window CSV. (+ residual at c=256 does not fit the device time left:
#     a first attempt to start this call failed and cost 121 s of it.)
set -uo pipefail
source .gpu/env.sh
R=/tmp/zc; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/zc.tgz" -C /tmp zc; }
stop_all() { pkill -TERM -x normbench; pkill -TERM -x normd; pkill -TERM -x normd-echo; sleep 3; }
run=tests/gpu/run_server_h200.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; free -g; } > "$R/machine.txt"
q4=--max-queue-bytes=4294967296
OUT=$R/serve_c8r STEPS=serve DURATION=8s SERVE_FLAGS=$q4 SERVE_SHAPES="4096:8" SERVE_MODES=residual \
  SERVE_NORMBENCH_FLAGS="--stability=0 --summary-windows=0 --window=2s" timeout 75 $run > "$R/serve_c8r.log" 2>&1
echo "serve c8 residual rc=$?"; stop_all; pack
OUT=$R/serve_c64 STEPS=serve DURATION=18s SERVE_FLAGS=$q4 SERVE_SHAPES="4096:64" \
  SERVE_NORMBENCH_FLAGS="--stability=0 --summary-windows=0 --window=6s" timeout 165 $run > "$R/serve_c64.log" 2>&1
echo "serve c64 rc=$?"; stop_all; pack
for mode in plain; do
  OUT=$R/serve_c256_$mode STEPS=serve DURATION=40s SERVE_FLAGS=--max-queue-bytes=21474836480 \
    SERVE_SHAPES="4096:256" SERVE_MODES=$mode \
    SERVE_NORMBENCH_FLAGS="--stability=0 --summary-windows=0 --window=20s --warmup=10s --window-csv=$R/windows_c256_$mode.csv" \
    timeout 160 $run > "$R/serve_c256_$mode.log" 2>&1
  echo "serve c256 $mode rc=$?"; free -g > "$R/free_after_$mode.txt"; stop_all; pack
done
for f in serve_c8r serve_c64 serve_c256_plain; do
  echo "== $f"; grep -E "^== .*normbench|^(target|baseline) |target/baseline|errors|per launch:" "$R/$f.log"
done
cat "$R"/windows_c256_*.csv
