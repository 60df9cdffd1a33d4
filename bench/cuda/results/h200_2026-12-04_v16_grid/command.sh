#!/usr/bin/env bash
# Built from the working tree after c611a0f with v16's rule (the library of call v16). Sixth
# nvidia-h200 call of the twenty-fourth session (2026-12-04): issue 3's whole grid at rows >= 1024
# (1024, 4096, 16384, 65536 x every H, dtype and mode; 168 points) in one run of
# compare_kernels.py on the final library, every anchor and the copy of the same bytes.
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/v16_grid.tgz" r; }
( while sleep 60; do pack; done ) &  # the log so far, should the machine be taken back
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 520 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so \
  --rows 1024,4096,16384,65536 --budget-s 480 --csv "$R/grid.csv" > "$R/grid.log" 2>&1
echo "grid rc=$?"; grep -a '^#' "$R/grid.log"
kill %1; pack && rm -rf "$R"
