#!/usr/bin/env bash
# Built from the working tree after c611a0f with v16's rule (the library of calls v16 and
# v16_grid). Seventh nvidia-h200 call of the twenty-fourth session (2026-12-04): issue 3's grid at
# rows 1, 8 and 128 (every H, dtype and mode; 126 points) in one run of compare_kernels.py: 20
# launches captured in one CUDA graph, L2-resident data, median replay / 20.
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/v16_small.tgz" r; }
( while sleep 60; do pack; done ) &  # the log so far, should the machine be taken back
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 360 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so \
  --rows 1,8,128 --budget-s 330 --csv "$R/grid.csv" > "$R/grid.log" 2>&1
echo "grid rc=$?"; grep -a '^#' "$R/grid.log"
kill %1; pack && rm -rf "$R"
