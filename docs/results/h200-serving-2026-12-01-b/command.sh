#!/usr/bin/env bash
# Second nvidia-h200 call of 2026-12-01 (sixth session): requests per launch for 1x4096 bf16 at c=8,
# 64, 256 with two workers: the previous dispatch (--fill-first-rows=0: the least loaded worker)
# against filling the first worker (--fill-first-rows=256), without and with waiting for company
# after launches of at least 9 requests (--company-min-requests=9: eight clients or fewer are never
# held). Each against the same echo, 2 s per point. Logs under $OUT/b.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/b; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/b.tgz" -C /tmp b; }
run=tests/gpu/run_server_h200.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
timeout 60 normd_server_unit_test --gtest_filter='Scheduler*:CopyPool*' > "$R/unit.log" 2>&1
echo "unit rc=$?"
for cfg in "0 0 2" "256 0 2" "256 500 9" "256 1000 9" "0 1000 9"; do
  read -r fill cw m <<<"$cfg"
  name=fill${fill}_cw${cw}_m$m
  OUT=$R/$name STEPS=batching BATCH_WORKERS=2 BATCH_WAITS=$cw \
    BATCH_FLAGS="--company-min-requests=$m --fill-first-rows=$fill" BATCH_LEVELS=8,64,256 DURATION=2s \
    timeout 70 $run > "$R/$name.log" 2>&1
  echo "$name rc=$?"
  awk '/^== .*batching/{n=$NF} /throughput target\/baseline/{r=$NF} /requests per launch/{print n, "ratio", r, $NF}' "$R/$name.log"
done
pack
