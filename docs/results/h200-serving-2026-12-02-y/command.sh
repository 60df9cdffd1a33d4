#!/usr/bin/env bash
# Third nvidia-h200 call of the fourteenth session (2026-12-02). Logs under $OUT/y.tgz.
# .gpu: normd = this commit (LargeBufferPool's budget automatic: max(--max-queue-bytes, 32 MiB) up to
# 1 GiB, here 1 GiB); normd-prev = d734c10 (protobuf-built 32 MiB responses). In call x the 256 MiB
# budget left 872 of 2,075 takes at 4096x4096 c=64 to fresh mappings, and normd / normd-prev there was
# 0.899 (three 4 s window pairs).
#  1. pair: normd (target) against normd-prev, 4096x4096 bf16 plain, c=64, 4 s window pairs (three).
#  2. pair: normd (target) against normd --response-pool-bytes=268435456 (call x's budget), same point.
set -uo pipefail
source .gpu/env.sh
R=/tmp/y; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/y.tgz" -C /tmp y; }
run=tests/gpu/run_server_h200.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
q=--max-queue-bytes=4294967296
OUT=$R/prev STEPS=pair DURATION=12s PAIR_NORMD_B=normd-prev PAIR_FLAGS_A=$q PAIR_FLAGS_B=$q \
  PAIR_POINTS="4096:64" PAIR_NORMBENCH_FLAGS="--stability=0 --summary-windows=0 --window=4s" \
  timeout 75 $run > "$R/prev.log" 2>&1
echo "prev rc=$?"; pack
OUT=$R/budget STEPS=pair DURATION=12s PAIR_FLAGS_A=$q PAIR_FLAGS_B="$q --response-pool-bytes=268435456" \
  PAIR_POINTS="4096:64" PAIR_NORMBENCH_FLAGS="--stability=0 --summary-windows=0 --window=4s" \
  timeout 75 $run > "$R/budget.log" 2>&1
echo "budget rc=$?"; pack
for f in prev budget; do
  echo "== $f"; grep -E "^== .*pair |^(target|baseline) |target/baseline|per launch:" "$R/$f.log"
  grep -h "^normd_response_pool_takes" "$R/$f/metrics_pair_a.txt" "$R/$f/metrics_pair_b.txt"
done
