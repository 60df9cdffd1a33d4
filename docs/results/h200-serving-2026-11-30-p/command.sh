#!/usr/bin/env bash
# Fifth nvidia-h200 call of 2026-11-30's fourth session, same normd (f186757): does busy polling by
# default cost the many-client points? normd_ab, --busy-poll-us=0 (A) against the default (B, polling
# 1000 us on these 16 cores), each against the same echo, in turn, two rounds of 3 s, 1 x 4096 bf16
# at c=64 and c=256, plain and with residual. Logs under $OUT/v (v.tgz).
set -uo pipefail
source .gpu/env.sh
R=/tmp/v; rm -rf "$R"; mkdir -p "$R"
OUT=$R STEPS=normd_ab DURATION=3s AB_ROUNDS=2 AB_FLAGS_A=--busy-poll-us=0 \
  AB_POINTS="1:64 1:256 1:64:residual 1:256:residual" timeout 200 tests/gpu/run_server_h200.sh > "$R/ab.log" 2>&1
echo "normd_ab rc=$?"
tar czf "$OUT/v.tgz" -C /tmp v
grep -E "^== .*normd_ab|throughput target|per launch|server time" "$R/ab.log"
