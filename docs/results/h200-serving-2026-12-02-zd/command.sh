#!/usr/bin/env bash
# Fourth nvidia-h200 call of the sixteenth session (2026-12-02). Logs under $OUT/zd.tgz.
# .gpu: as calls z-zc. At 4096x4096 plain c=256 normd served 0.714 (zb) and 0.665 (zc) of the echo,
# while its own time per request was 55 ms of an 8.4 s latency, and 62% of its 32 MiB response buffers
# were fresh mappings (zc: 985 mapped, 594 reused; the automatic budget is 1 GiB, 32 buffers, against
# 256 requests in flight). One question: does normd reach the echo there when it keeps them all?
#  1. The same point as zc's, normd with --response-pool-bytes=16 GiB.
set -uo pipefail
source .gpu/env.sh
R=/tmp/zd; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/zd.tgz" -C /tmp zd; }
run=tests/gpu/run_server_h200.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; free -g; } > "$R/machine.txt"
OUT=$R/serve_c256_pool STEPS=serve DURATION=40s \
  SERVE_FLAGS="--max-queue-bytes=21474836480 --response-pool-bytes=17179869184" \
  SERVE_SHAPES="4096:256" SERVE_MODES=plain \
  SERVE_NORMBENCH_FLAGS="--stability=0 --summary-windows=0 --window=20s --warmup=10s --window-csv=$R/windows_c256_pool.csv" \
  timeout 160 $run > "$R/serve_c256_pool.log" 2>&1
echo "serve c256 pool rc=$?"; free -g > "$R/free_after.txt"; pack
grep -E "^== .*normbench|^(target|baseline) |target/baseline|errors|per launch:" "$R/serve_c256_pool.log"
python3 tests/gpu/metrics_delta.py "$R/serve_c256_pool/m_before.txt" "$R/serve_c256_pool/m_after.txt"
grep -h "pool_takes\|resident" "$R/serve_c256_pool/metrics_w2.txt" | grep -v "^#"
cat "$R/windows_c256_pool.csv"
