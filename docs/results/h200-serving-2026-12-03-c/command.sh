#!/usr/bin/env bash
# Third nvidia-h200 call of the seventeenth session (2026-12-03). Logs under $OUT/c.tgz.
# .gpu: as call a (436dd44; call b's upload turns reverted). The last point of issue 8's grid never measured: 4096x4096 bf16 with a residual
# (64 MiB each way a request) at c=256 against the echo, --max-queue-bytes=20 GiB (256 x 64 MiB in
# flight), no pool flag; 30 s of load, then three 20 s window pairs. Memory sampled every 5 s.
# Note (added after the run): the --warmup=30s below did not take effect; run_server_h200.sh passed its
# own --warmup=1s after it, and normbench took the last (fixed since; docs/BENCHMARKS.md).
set -uo pipefail
source .gpu/env.sh
R=/tmp/c; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/c.tgz" -C /tmp c; }
stop_all() { pkill -TERM -x normbench; pkill -TERM -x normd; pkill -TERM -x normd-echo; sleep 3; \
  pkill -KILL -x normbench; pkill -KILL -x normd; pkill -KILL -x normd-echo; sleep 1; }
run=tests/gpu/run_server_h200.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; free -g; } > "$R/machine.txt"
( while sleep 5; do echo "$(date -u +%T) $(free -g | awk '/Mem:/ {print "used", $3, "avail", $7}')"; done ) \
  > "$R/memory.txt" 2>&1 &
mem_pid=$!
OUT=$R/serve_c256_res STEPS=serve DURATION=60s SERVE_FLAGS="--max-queue-bytes=21474836480" \
  SERVE_SHAPES="4096:256" SERVE_MODES=residual \
  SERVE_NORMBENCH_FLAGS="--stability=0 --summary-windows=0 --window=20s --warmup=30s --window-csv=$R/windows_c256_res.csv" \
  timeout 420 $run > "$R/serve_c256_res.log" 2>&1
echo "serve c256 residual rc=$?"; kill $mem_pid; stop_all; pack
grep -E "^== .*normbench|^(target|baseline) |target/baseline|errors|per launch:" "$R/serve_c256_res.log"
python3 tests/gpu/metrics_delta.py "$R/serve_c256_res/m_before.txt" "$R/serve_c256_res/m_after.txt"
grep -h "pool_takes\|resident" "$R/serve_c256_res/metrics_w2.txt" | grep -v "^#"
cat "$R/windows_c256_res.csv"
sort -k3 -n "$R/memory.txt" | tail -2
