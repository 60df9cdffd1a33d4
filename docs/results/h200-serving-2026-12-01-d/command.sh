#!/usr/bin/env bash
# Fourth nvidia-h200 call of 2026-12-01 (sixth session), the session's final code with default flags
# (copy pool automatic, --fill-first-rows=256, --company-wait-us automatic = 1000 with
# --company-min-requests=9): (1) the server unit tests and the integration suite against
# normd --backend=cuda; (2) issue 8's grid (serve step, 3 s per point, --max-queue-bytes=4 GiB so that
# 64 clients of 32 MiB requests fit); (3) the stages step (32 MiB requests at c=8: device time per
# request against the link; 1-row requests at c=64 with one and two workers); (4) the c1 step, CUDA
# backend with default flags. Logs under $OUT/d.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/d; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/d.tgz" -C /tmp d; }
run=tests/gpu/run_server_h200.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
timeout 100 normd_server_unit_test --gtest_brief=1 > "$R/unit.log" 2>&1
echo "unit rc=$?"; tail -2 "$R/unit.log"
OUT=$R/integration STEPS=integration timeout 200 $run > "$R/integration.log" 2>&1
echo "integration rc=$?"; grep -E "PASSED|FAILED" "$R/integration.log" | tail -5; pack
OUT=$R/grid STEPS=serve DURATION=3s SERVE_FLAGS=--max-queue-bytes=4294967296 timeout 400 $run > "$R/grid.log" 2>&1
echo "grid rc=$?"; pack
awk '/^== .*normbench/{n=$NF} /throughput target\/baseline/{r=$NF} /requests per launch/{print n, "ratio", r, "rpl", $NF}' "$R/grid.log"
OUT=$R/stages STEPS=stages timeout 120 $run > "$R/stages.log" 2>&1
echo "stages rc=$?"; pack
OUT=$R/c1 STEPS=c1 C1_VARIANTS=cuda DURATION=3s timeout 80 $run > "$R/c1.log" 2>&1
echo "c1 rc=$?"; pack
