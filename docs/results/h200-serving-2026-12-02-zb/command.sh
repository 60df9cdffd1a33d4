#!/usr/bin/env bash
# Second nvidia-h200 call of the sixteenth session (2026-12-02). Logs under $OUT/zb.tgz.
# .gpu: as call z (this commit's normd, normd-echo, normbench).
#  1. Issue 8's grid, 4096x4096 bf16 (32 MiB) plain and with a residual, against the echo in one run:
#     c=1 and 8 in 2 s window pairs (four a point); c=64 in 6 s pairs (three; a request takes ~2 s
#     there); c=256 in 20 s pairs (two, after 10 s of load; ~7 s a request), with --max-queue-bytes
#     raised to hold 256 such requests (64 MiB each with a residual).
#  2. The stage target: 32 MiB requests at c=8, device time per request against the link bandwidth.
set -uo pipefail
source .gpu/env.sh
R=/tmp/zb; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/zb.tgz" -C /tmp zb; }
run=tests/gpu/run_server_h200.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; free -g; } > "$R/machine.txt"
q4=--max-queue-bytes=4294967296
OUT=$R/serve_c1_c8 STEPS=serve DURATION=8s SERVE_FLAGS=$q4 SERVE_SHAPES="4096:1,8" \
  SERVE_NORMBENCH_FLAGS="--stability=0 --summary-windows=0 --window=2s" timeout 110 $run > "$R/serve_c1_c8.log" 2>&1
echo "serve c1,c8 rc=$?"; pack
OUT=$R/serve_c64 STEPS=serve DURATION=18s SERVE_FLAGS=$q4 SERVE_SHAPES="4096:64" \
  SERVE_NORMBENCH_FLAGS="--stability=0 --summary-windows=0 --window=6s" timeout 150 $run > "$R/serve_c64.log" 2>&1
echo "serve c64 rc=$?"; pack
OUT=$R/serve_c256 STEPS=serve DURATION=40s SERVE_FLAGS=--max-queue-bytes=21474836480 SERVE_SHAPES="4096:256" \
  SERVE_NORMBENCH_FLAGS="--stability=0 --summary-windows=0 --window=20s --warmup=10s" timeout 215 $run \
  > "$R/serve_c256.log" 2>&1
echo "serve c256 rc=$?"; free -g > "$R/free_after.txt"; pack
OUT=$R/stages STEPS=stages STAGES_WORKERS=2 timeout 60 $run > "$R/stages.log" 2>&1
echo "stages rc=$?"; pack
for f in serve_c1_c8 serve_c64 serve_c256; do
  echo "== $f"; grep -E "^== .*normbench|^(target|baseline) |target/baseline|errors|per launch:" "$R/$f.log"
done
echo "== stages"; grep -vE "^#" "$R/stages.log" | tail -25
