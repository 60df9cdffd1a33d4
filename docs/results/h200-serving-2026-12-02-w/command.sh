#!/usr/bin/env bash
# First nvidia-h200 call of the fourteenth session (2026-12-02). Logs under $OUT/w.tgz.
# .gpu: normd, normd-echo, normbench of HEAD d734c10 (the inline OnDone of call v included).
#  1. The rest of issue 8's grid, 64x4096 and 4096x4096 bf16 (plain and with a residual), against the
#     echo as window pairs (six 1 s pairs a point): calls o and j merged three windows a point.
#  2. Eight normbench connections per server (`cpu` step, each server alone, 3 s): where the CPU goes
#     with the defaults, without the company wait, and without busy polling, at 1x4096 c=64 and 256.
#  3. Eight connections head to head (`pair`): the default (target) against --company-wait-us=0
#     (baseline), six window pairs a point.
set -uo pipefail
source .gpu/env.sh
R=/tmp/w; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/w.tgz" -C /tmp w; }
run=tests/gpu/run_server_h200.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/serve STEPS=serve DURATION=6s SERVE_FLAGS=--max-queue-bytes=4294967296 \
  SERVE_SHAPES="64:1,8,64,256 4096:1,8,64" SERVE_NORMBENCH_FLAGS="--stability=0 --summary-windows=0" \
  timeout 290 $run > "$R/serve.log" 2>&1
echo "serve rc=$?"; pack
OUT=$R/cpu8 STEPS=cpu DURATION=3s CPU_POINTS="1:64 1:256" CPU_NORMBENCH_FLAGS=--connections=8 \
  CPU_VARIANTS="default;--company-wait-us=0;--busy-poll-us=0" timeout 60 $run > "$R/cpu8.log" 2>&1
echo "cpu8 rc=$?"; pack
OUT=$R/pair8 STEPS=pair DURATION=6s PAIR_FLAGS_B=--company-wait-us=0 \
  PAIR_POINTS="1:64 1:64:residual 1:256" \
  PAIR_NORMBENCH_FLAGS="--connections=8 --stability=0 --summary-windows=0" \
  timeout 70 $run > "$R/pair8.log" 2>&1
echo "pair8 rc=$?"; pack
echo "== serve"; grep -E "^== .*normbench|^(target|baseline) |target/baseline|requests per launch" "$R/serve.log"
echo "== cpu8"; grep -E "^cpu r|^  thread|requests per launch" "$R/cpu8.log"
echo "== pair8"; grep -E "^== .*pair |^(target|baseline) |target/baseline|requests per launch" "$R/pair8.log"
