#!/usr/bin/env bash
# Fourth nvidia-h200 call of the eleventh session (2026-12-02). Logs and normbench CSVs under $OUT/j.tgz.
# .gpu: this commit's normd (defaults: four reply threads per worker on this machine), normd-echo,
# normbench. Issue 8's grid (serve step): 1x4096, 64x4096 and 4096x4096 bf16, plain and with a
# residual, at c = 1, 8, 64, 256 (4096 rows: up to 64), normd against the echo, 3 s per point, one
# normbench connection per server (as in every earlier grid); then a few points with eight
# connections (normd_ab, one round, defaults on both sides).
set -uo pipefail
source .gpu/env.sh
R=/tmp/j; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/j.tgz" -C /tmp j; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/serve STEPS=serve DURATION=3s SERVE_FLAGS=--max-queue-bytes=4294967296 \
  timeout 400 tests/gpu/run_server_h200.sh > "$R/serve.log" 2>&1
echo "serve rc=$?"; pack
OUT=$R/conn8 STEPS=normd_ab DURATION=3s AB_ROUNDS=1 AB_NORMBENCH_FLAGS=--connections=8 \
  AB_POINTS="1:64 1:256 64:64" timeout 100 tests/gpu/run_server_h200.sh > "$R/conn8.log" 2>&1
echo "conn8 rc=$?"; pack
grep -E "^== .*normbench|target/baseline|requests per launch" "$R/serve.log"
grep -E "^== .*normd_ab|target/baseline|requests per launch" "$R/conn8.log"
