#!/usr/bin/env bash
# Fifth nvidia-h200 call of the twelfth session (2026-12-02). Logs and normbench CSVs under $OUT/q.tgz.
# .gpu: as calls o and p (the session's final defaults). A second sample of the grid's 1-row points,
# where call o's four misses were: 1x4096 bf16, plain and with a residual, c = 1, 8, 64, 256, normd
# against the echo, 3 s per point, one normbench connection per server.
set -uo pipefail
source .gpu/env.sh
R=/tmp/q; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/q.tgz" -C /tmp q; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/serve STEPS=serve DURATION=3s SERVE_SHAPES="1:1,8,64,256" \
  timeout 150 tests/gpu/run_server_h200.sh > "$R/serve.log" 2>&1
echo "serve rc=$?"; pack
grep -E "^== .*normbench|target/baseline|requests per launch" "$R/serve.log"
grep -E "^(target|baseline) +c=1 " "$R/serve.log"
