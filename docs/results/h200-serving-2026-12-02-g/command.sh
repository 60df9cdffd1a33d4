#!/usr/bin/env bash
# First nvidia-h200 call of the eleventh session (2026-12-02). Logs under $OUT/g.tgz.
# .gpu holds this commit's normd (reply threads: a launch's answers but the first go to helper
# threads, --reply-threads, automatic 4 per worker here), normd-echo, normbench, normd_integration_test.
# (1) the integration suite against normd --backend=cuda;
# (2) normd_ab: the same binary with --reply-threads=1 (a: the worker answers alone, as before) against
#     the default (b), each against the same echo, in turn, two rounds of 3 s, at 1-row requests over
#     c = 1, 8, 64, 256, with a residual at c = 1 and 64, and 64 rows at c = 64.
set -uo pipefail
source .gpu/env.sh
R=/tmp/g; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/g.tgz" -C /tmp g; }
run=tests/gpu/run_server_h200.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/integration STEPS=integration timeout 200 $run > "$R/integration.log" 2>&1
echo "integration rc=$?"; pack
OUT=$R/ab STEPS=normd_ab DURATION=3s AB_ROUNDS=2 AB_FLAGS_A=--reply-threads=1 \
  AB_POINTS="1:1 1:1:residual 1:8 1:64 1:64:residual 1:256 64:64" timeout 380 $run > "$R/ab.log" 2>&1
echo "ab rc=$?"; pack
grep -E "tests? (passed|failed)|FAILED|PASSED" "$R/integration.log" | tail -5
grep -E "^== .*normd_ab|target/baseline|server time|per launch|^target|^baseline" "$R/ab.log"
