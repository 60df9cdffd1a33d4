#!/usr/bin/env bash
# Third nvidia-h200 call of the twelfth session (2026-12-02). Logs and normbench CSVs under $OUT/o.tgz.
# .gpu: normd with the final defaults of the session (company memory of 8 launches, at most 20
# requests), normd-echo, normbench, the integration test.
#   integration  the integration suite against normd --backend=cuda;
#   serve        issue 8's grid: 1x4096, 64x4096 and 4096x4096 bf16, plain and with a residual, at
#                c = 1, 8, 64, 256 (4096 rows: up to 64), normd against the echo, 3 s per point, one
#                normbench connection per server;
#   stages       32 MiB requests at c = 8: device time per request against bytes over the link;
#   conn8        eight connections, defaults on both sides of normd_ab, one round (as call j).
set -uo pipefail
source .gpu/env.sh
R=/tmp/o; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/o.tgz" -C /tmp o; }
run=tests/gpu/run_server_h200.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/integration STEPS=integration timeout 110 $run > "$R/integration.log" 2>&1
echo "integration rc=$?"; pack
OUT=$R/serve STEPS=serve DURATION=3s SERVE_FLAGS=--max-queue-bytes=4294967296 \
  timeout 330 $run > "$R/serve.log" 2>&1
echo "serve rc=$?"; pack
OUT=$R/stages STEPS=stages timeout 80 $run > "$R/stages.log" 2>&1
echo "stages rc=$?"; pack
OUT=$R/conn8 STEPS=normd_ab DURATION=3s AB_ROUNDS=1 AB_NORMBENCH_FLAGS=--connections=8 \
  AB_POINTS="1:64 1:256 64:64" timeout 70 $run > "$R/conn8.log" 2>&1
echo "conn8 rc=$?"; pack
grep -E "tests? (passed|failed)|FAILED|PASSED" "$R/integration/integration_cuda.log" | tail -3
grep -E "^== .*normbench|target/baseline|requests per launch" "$R/serve.log"
grep -E "c=8:|device|link|per request" "$R/stages.log" | head -20
grep -E "^== .*normd_ab|target/baseline|requests per launch" "$R/conn8.log"
