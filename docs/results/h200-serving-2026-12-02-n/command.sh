#!/usr/bin/env bash
# Second nvidia-h200 call of the twelfth session (2026-12-02). Logs and normbench CSVs under $OUT/n.tgz.
# .gpu: the bundle of call m (commit d6dca44: company memory of 8 launches, at most 16 requests).
# How many requests a launch should wait for at most (--company-max-requests), normd_ab with the same
# binary, each side against the same echo, in turn:
#   cap20: a = 16 (the default) against b = 20, one connection, two rounds of 3 s, 1-row requests at
#          c = 64 plain and with a residual, c = 256 with a residual;
#   cap24: a = 16 against b = 24, the same points;
#   conn8: a = 20 against b = 24, eight connections, one round, 1-row at c = 64 and 256 (16: call m).
set -uo pipefail
source .gpu/env.sh
R=/tmp/n; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/n.tgz" -C /tmp n; }
run=tests/gpu/run_server_h200.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
for b in 20 24; do
  OUT=$R/cap$b STEPS=normd_ab DURATION=3s AB_ROUNDS=2 AB_FLAGS_A=--company-max-requests=16 \
    AB_FLAGS_B=--company-max-requests=$b AB_POINTS="1:64 1:64:residual 1:256:residual" \
    timeout 170 $run > "$R/cap$b.log" 2>&1
  echo "cap$b rc=$?"; pack
done
OUT=$R/conn8 STEPS=normd_ab DURATION=3s AB_ROUNDS=1 AB_FLAGS_A=--company-max-requests=20 \
  AB_FLAGS_B=--company-max-requests=24 AB_NORMBENCH_FLAGS=--connections=8 AB_POINTS="1:64 1:256" \
  timeout 80 $run > "$R/conn8.log" 2>&1
echo "conn8 rc=$?"; pack
grep -E "^== .*normd_ab|target/baseline|per launch [0-9]" "$R"/cap20.log "$R"/cap24.log "$R"/conn8.log
