#!/usr/bin/env bash
# First nvidia-h200 call of the twelfth session (2026-12-02). Logs and normbench CSVs under $OUT/m.tgz.
# .gpu: this commit's normd (company memory: a launch waits for as many requests as the largest of the
# worker's last 8 launches carried, at most 16), normd-echo, normbench.
# normd_ab, the same binary: a = the previous rule (--company-memory=1: the last launch alone, no
# maximum) against b = the new defaults, each against the same echo, in turn:
#   one connection (as issue 8's grid): 1-row requests at c = 8, 64, 256, plain and with a residual at
#   c = 64 and 256, 64 rows at c = 64; two rounds of 3 s;
#   eight connections: 1-row at c = 64 and 256, 64 rows at c = 64; one round.
set -uo pipefail
source .gpu/env.sh
R=/tmp/m; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/m.tgz" -C /tmp m; }
run=tests/gpu/run_server_h200.sh
OLD="--company-memory=1 --company-max-requests=1000000"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/ab1 STEPS=normd_ab DURATION=3s AB_ROUNDS=2 AB_FLAGS_A="$OLD" \
  AB_POINTS="1:8 1:64 1:64:residual 1:256 1:256:residual 64:64" timeout 330 $run > "$R/ab1.log" 2>&1
echo "ab1 rc=$?"; pack
OUT=$R/ab8 STEPS=normd_ab DURATION=3s AB_ROUNDS=1 AB_FLAGS_A="$OLD" AB_NORMBENCH_FLAGS=--connections=8 \
  AB_POINTS="1:64 1:256 64:64" timeout 120 $run > "$R/ab8.log" 2>&1
echo "ab8 rc=$?"; pack
grep -E "^== .*normd_ab|target/baseline|server time|per launch" "$R/ab1.log" "$R/ab8.log"
