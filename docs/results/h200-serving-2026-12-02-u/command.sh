#!/usr/bin/env bash
# Fourth nvidia-h200 call of the thirteenth session (2026-12-02). Logs under $OUT/u.tgz.
# .gpu: as call t. Call t: the echo answering from one holder thread in bursts lost 1-5% at c=64/256,
# normd about 10% at c=256: does answering one connection's calls from several reply threads at once
# cost it? Head to head (`pair` step), normd default (target, 4 reply threads per worker) against
# normd --reply-threads=1 (baseline, the worker answers alone), ten 1 s window pairs a point, one
# connection; then c=64 over eight connections, where the reply threads were worth ~45% (call i).
set -uo pipefail
source .gpu/env.sh
R=/tmp/u; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/u.tgz" -C /tmp u; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/pair1 STEPS=pair DURATION=10s PAIR_FLAGS_B="--reply-threads=1" PAIR_POINTS="1:64 1:256 1:256:residual" \
  PAIR_NORMBENCH_FLAGS="--stability=0 --summary-windows=0" \
  timeout 120 tests/gpu/run_server_h200.sh > "$R/pair1.log" 2>&1
echo "pair1 rc=$?"; pack
OUT=$R/pair8 STEPS=pair DURATION=10s PAIR_FLAGS_B="--reply-threads=1" PAIR_POINTS="1:64" \
  PAIR_NORMBENCH_FLAGS="--stability=0 --summary-windows=0 --connections=8" \
  timeout 60 tests/gpu/run_server_h200.sh > "$R/pair8.log" 2>&1
echo "pair8 rc=$?"; pack
for f in pair1 pair8; do
  echo "== $f"; grep -E "^== .*pair |target/baseline|requests per launch|^(target|baseline) " "$R/$f.log"
done
