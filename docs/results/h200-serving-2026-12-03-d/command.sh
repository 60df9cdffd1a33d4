#!/usr/bin/env bash
# Fourth nvidia-h200 call of the seventeenth session (2026-12-03). Logs under $OUT/d.tgz.
# .gpu: as calls a and c (436dd44). Call a's 4096x4096 plain c=256 point again, for a second run of it
# on this build: --max-queue-bytes=20 GiB, no pool flag, 30 s of load, three 20 s window pairs.
# Note (added after the run): the --warmup=30s below did not take effect; run_server_h200.sh passed its
# own --warmup=1s after it, and normbench took the last (fixed since; docs/BENCHMARKS.md).
set -uo pipefail
source .gpu/env.sh
R=/tmp/d; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/d.tgz" -C /tmp d; }
run=tests/gpu/run_server_h200.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; free -g; } > "$R/machine.txt"
OUT=$R/serve_c256 STEPS=serve DURATION=60s SERVE_FLAGS="--max-queue-bytes=21474836480" \
  SERVE_SHAPES="4096:256" SERVE_MODES=plain \
  SERVE_NORMBENCH_FLAGS="--stability=0 --summary-windows=0 --window=20s --warmup=30s --window-csv=$R/windows_c256.csv" \
  timeout 300 $run > "$R/serve_c256.log" 2>&1
echo "serve c256 rc=$?"; pack
grep -E "^== .*normbench|^(target|baseline) |target/baseline|errors|per launch:" "$R/serve_c256.log"
grep -h "pool_takes\|resident" "$R/serve_c256/metrics_w2.txt" | grep -v "^#"
cat "$R/windows_c256.csv"
