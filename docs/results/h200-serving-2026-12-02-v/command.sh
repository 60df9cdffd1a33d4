#!/usr/bin/env bash
# Fifth nvidia-h200 call of the thirteenth session (2026-12-02). Logs under $OUT/v.tgz.
# .gpu: normd = this commit (unary reactors InternalInlineable: OnDone runs where the call completes,
# not on gRPC's executor); normd-prev = HEAD 7011123 (before it). In call r gRPC's default-executor
# threads spent 45 us a request in normd at 1x4096 c=256, 21-24 in the echo.
#  1. Head to head (`pair`), normd (target) against normd-prev (baseline), ten 1 s window pairs a point.
#  2. Where the CPU goes now (`cpu`), 1x4096 c=256, echo then normd, each alone.
#  3. The 1-row points of issue 8's grid against the echo, eight window pairs a point.
set -uo pipefail
source .gpu/env.sh
R=/tmp/v; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/v.tgz" -C /tmp v; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/pair STEPS=pair DURATION=10s PAIR_NORMD_B=normd-prev \
  PAIR_POINTS="1:8 1:64 1:256 1:64:residual 1:256:residual" \
  PAIR_NORMBENCH_FLAGS="--stability=0 --summary-windows=0" \
  timeout 160 tests/gpu/run_server_h200.sh > "$R/pair.log" 2>&1
echo "pair rc=$?"; pack
OUT=$R/cpu STEPS=cpu DURATION=3s CPU_POINTS="1:256" timeout 40 tests/gpu/run_server_h200.sh > "$R/cpu.log" 2>&1
echo "cpu rc=$?"; pack
OUT=$R/serve STEPS=serve DURATION=8s SERVE_SHAPES="1:1,8,64,256" \
  SERVE_NORMBENCH_FLAGS="--stability=0 --summary-windows=0" \
  timeout 200 tests/gpu/run_server_h200.sh > "$R/serve.log" 2>&1
echo "serve rc=$?"; pack
echo "== pair"; grep -E "^== .*pair |target/baseline|^(target|baseline) " "$R/pair.log"
echo "== cpu"; grep -E "^cpu r|^  thread" "$R/cpu.log"
echo "== serve"; grep -E "^== .*normbench|target/baseline|requests per launch" "$R/serve.log"
