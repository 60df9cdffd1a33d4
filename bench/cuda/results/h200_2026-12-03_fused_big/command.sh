#!/usr/bin/env bash
# Built from the working tree after e7660ff (the bundle of call rows_per_block; kernels unchanged).
# Fourth nvidia-h200 call of the twenty-second session (2026-12-03): fp32 rows with a residual at
# 16384 and 65536 rows, where ours ran 2-3.5% slower than a copy of the same bytes (call ceiling)
# and below 4.2 TB/s, never swept under do_bench before; and 16-bit fused H 5120 (and bf16 65536 x
# 8192), where torch.compile led by 0.4-1.2%. shape_sweep.py, 3 interleaved rounds, our kernels'
# variants beside torch.compile and two ceilings: the copy of the same bytes, and x and r copied
# in one launch (the four streams of a fused add).
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/fused_big.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
SW="python3 bench/cuda/shape_sweep.py --lib .gpu/lib/libnormd_cuda_kernels.so --anchors compile --ceilings --rounds 3"
V=auto,reload=on+n=1,reload=on+n=2,reload=on+n=4,lean=on,staging=on,staging=off,reload=off+n=2,reload=off+n=4,reload=off+n=8
timeout 240 $SW --shapes fp32:fused:16384x3000,fp32:fused:16384x5120,fp32:fused:16384x8192,fp32:fused:16384x16384 \
  --variants $V > "$R/fp32_16384.txt" 2>&1; echo "fp32 16384 rc=$?"; pack
timeout 200 $SW --shapes fp32:fused:65536x3000,fp32:fused:65536x5120,fp32:fused:65536x8192,fp32:fused:65536x16384 \
  --variants $V > "$R/fp32_65536.txt" 2>&1; echo "fp32 65536 rc=$?"; pack
timeout 120 $SW --shapes bf16:fused:16384x5120,bf16:fused:65536x5120,fp16:fused:65536x5120,bf16:fused:65536x8192 \
  --variants auto,reload=on+n=1,reload=on+n=2,reload=on+n=4,lean=on,reload=off+n=2,reload=off+n=4 \
  > "$R/b16.txt" 2>&1; echo "16-bit rc=$?"
cat "$R"/fp32_16384.txt "$R"/fp32_65536.txt "$R"/b16.txt | grep -v '^shape'
pack && rm -rf "$R"
