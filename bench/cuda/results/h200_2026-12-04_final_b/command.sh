#!/usr/bin/env bash
# Built from commit c611a0f (v15, unchanged). Second nvidia-h200 call of the twenty-fourth session
# (2026-12-04): the second half of issue 3's grid in one run of compare_kernels.py: rows 16384 and
# 65536, every H (7168 too), dtype and mode, every anchor and the copy of the same bytes.
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/final_b.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 540 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so \
  --rows 16384,65536 --budget-s 500 --csv "$R/grid.csv" > "$R/grid.log" 2>&1
echo "grid rc=$?"; grep -a '^#' "$R/grid.log"
pack && rm -rf "$R"
