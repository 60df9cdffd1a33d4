#!/usr/bin/env bash
# Second nvidia-h200 call of the thirteenth session (2026-12-02). Logs under $OUT/s.tgz.
# .gpu: normd as HEAD 7011123; normbench now prints the median of its window pairs' ratios.
#  1. The 1-row points of issue 8's grid, ten 1 s window pairs each (normd, echo alternately), the
#     default flags: the median pair ratio instead of three merged windows.
#  2. Head to head, normd default (target) against normd --fill-first-rows=0 (baseline) at c=8, where
#     1-row requests queue 24 us behind the first worker's launch while the second is idle.
#  3. Head to head, normd default against --busy-poll-us=0 at c=64 and c=256 with a residual.
set -uo pipefail
source .gpu/env.sh
R=/tmp/s; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/s.tgz" -C /tmp s; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/serve STEPS=serve DURATION=10s SERVE_SHAPES="1:1,8,64,256" \
  SERVE_NORMBENCH_FLAGS="--stability=0 --summary-windows=0" \
  timeout 280 tests/gpu/run_server_h200.sh > "$R/serve.log" 2>&1
echo "serve rc=$?"; pack
OUT=$R/pair_ff STEPS=pair DURATION=10s PAIR_FLAGS_B="--fill-first-rows=0" PAIR_POINTS="1:8 1:8:residual" \
  PAIR_NORMBENCH_FLAGS="--stability=0 --summary-windows=0" \
  timeout 90 tests/gpu/run_server_h200.sh > "$R/pair_ff.log" 2>&1
echo "pair_ff rc=$?"; pack
OUT=$R/pair_poll STEPS=pair DURATION=10s PAIR_FLAGS_B="--busy-poll-us=0" PAIR_POINTS="1:64 1:256:residual" \
  PAIR_NORMBENCH_FLAGS="--stability=0 --summary-windows=0" \
  timeout 90 tests/gpu/run_server_h200.sh > "$R/pair_poll.log" 2>&1
echo "pair_poll rc=$?"; pack
for f in serve pair_ff pair_poll; do
  echo "== $f"; grep -E "^== .*(normbench|pair )|target/baseline|requests per launch|^(target|baseline) " "$R/$f.log"
done
