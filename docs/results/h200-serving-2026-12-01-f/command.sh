#!/usr/bin/env bash
# First nvidia-h200 call of the tenth session (2026-12-01). Logs under $OUT/f.tgz.
# .gpu holds this commit's normd (new host-side stages submit, wait, reply; zero-copy launches without
# timing events; the busy poll looking at the queue after every pause), normd-echo, normbench,
# normd_integration_test, and in .gpu/old/normd the previous commit's normd (9ff0eb1).
# (1) the integration suite against the new normd --backend=cuda;
# (2) normd_ab: old (a) against new (b), each against the same echo, in turn, three rounds of 3 s, at
#     1x4096 c=1 plain and with a residual, and 64x4096 c=1: server time and stages per side.
set -uo pipefail
source .gpu/env.sh
R=/tmp/f; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/f.tgz" -C /tmp f; }
run=tests/gpu/run_server_h200.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/integration STEPS=integration timeout 200 $run > "$R/integration.log" 2>&1
echo "integration rc=$?"; pack
OUT=$R/ab STEPS=normd_ab DURATION=3s AB_ROUNDS=3 NORMD_A=$PWD/.gpu/old/normd \
  AB_POINTS="1:1 1:1:residual 64:1" timeout 330 $run > "$R/ab.log" 2>&1
echo "ab rc=$?"; pack
grep -E "tests? (passed|failed)|FAILED|PASSED" "$R/integration.log" | tail -5
grep -E "^== .*normd_ab|target/baseline|server time|per launch|^target|^baseline" "$R/ab.log"
