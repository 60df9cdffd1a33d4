#!/usr/bin/env bash
# Built from commit 108efe0 (the bundle of call v13). Seventh nvidia-h200 call of the twenty-first
# session (2026-12-03): the comparison script at rows 1 and 8 on the final library (v12's call
# push_c measured the same points before v13).
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/v13_compare.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 150 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so --rows 1,8 \
  --budget-s 100 --csv "$R/compare.csv" > "$R/compare.log" 2>&1
echo "compare rc=$?"; tail -2 "$R/compare.log"
pack && rm -rf "$R"
