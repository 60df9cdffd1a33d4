#!/usr/bin/env bash
# Built from commit c611a0f (v15, the final library of the twenty-third session, unchanged). First
# nvidia-h200 call of the twenty-fourth session (2026-12-04): the integration suite against the real
# normd --backend=cuda on v15's library (not run in the twenty-third session), then the first half of
# issue 3's grid in one run of compare_kernels.py: rows 1024 and 4096, every H, dtype and mode,
# every anchor and the copy of the same bytes.
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/final_a.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
OUT=$R/integration STEPS=integration timeout 130 tests/gpu/run_server_h200.sh > "$R/integration.log" 2>&1
echo "integration rc=$?"; grep -a 'PASSED\|FAILED' "$R/integration.log" | tail -3; pack
timeout 400 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so \
  --rows 1024,4096 --budget-s 370 --csv "$R/grid.csv" > "$R/grid.log" 2>&1
echo "grid rc=$?"; grep -a '^#' "$R/grid.log"
pack && rm -rf "$R"
