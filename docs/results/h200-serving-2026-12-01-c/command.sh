#!/usr/bin/env bash
# Third nvidia-h200 call of 2026-12-01 (sixth session): issue 8's grid (serve step, 3 s per point) with
# the settings this session made the defaults, given explicitly (the bundle was built before they
# became defaults): copy pool automatic (4 threads per worker here), --fill-first-rows=256,
# --company-wait-us=1000 --company-min-requests=9; and --max-queue-bytes=4 GiB so that 64 clients of
# 32 MiB requests fit. Logs under $OUT/c.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/c; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/c.tgz" -C /tmp c; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/grid STEPS=serve DURATION=3s \
  SERVE_FLAGS="--max-queue-bytes=4294967296 --fill-first-rows=256 --company-wait-us=1000 --company-min-requests=9" \
  timeout 400 tests/gpu/run_server_h200.sh > "$R/grid.log" 2>&1
echo "grid rc=$?"; pack
awk '/^== .*normbench/{n=$NF} /throughput target\/baseline/{r=$NF} /requests per launch/{print n, "ratio", r, "rpl", $NF}' "$R/grid.log"
