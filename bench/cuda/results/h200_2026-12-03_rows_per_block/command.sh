#!/usr/bin/env bash
# Built from the working tree after e7660ff: RmsNormOptions::rows_per_block (a tuning override,
# kernels unchanged). Third nvidia-h200 call of the twenty-second session (2026-12-03): ncu (call
# h1024) timed torch.compile's bf16 plain 16384 x 1024 kernel at 16.96 us in 32-thread blocks of
# one row, ours at 17.73 in 256-thread blocks of eight rows of 32 threads. Do fewer rows per block
# help ours? shape_sweep.py, 3 interleaved rounds, our row groups under 128 threads with b = 1, 2,
# 4 rows per block beside the automatic 256-thread blocks, torch.compile and Triton.
# Not kept (no gain): the library side is rows_per_block.patch (against e7660ff); shape_sweep.py
# then had a variant key b, passed to normd_cuda_rmsnorm_tuned as a ninth int after split.
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/rows_per_block.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
SW="python3 bench/cuda/shape_sweep.py --lib .gpu/lib/libnormd_cuda_kernels.so --anchors compile,triton --rounds 3"
P16=bf16:plain:16384x1024,fp16:plain:16384x1024,bf16:plain:65536x1024,fp16:plain:65536x1024,bf16:plain:4096x1024,fp16:plain:4096x1024
timeout 200 $SW --shapes $P16 --variants auto,b=1,b=2,b=4,reload=off+n=4,reload=off+n=4+b=1,reload=off+n=4+b=2 \
  > "$R/plain16.txt" 2>&1; echo "plain16 rc=$?"; pack
F16=bf16:fused:16384x1024,fp16:fused:16384x1024,bf16:fused:4096x1024,fp16:fused:4096x1024
timeout 150 $SW --shapes $F16 --variants auto,b=1,b=2,b=4,reload=on+n=4,reload=on+n=4+b=1,reload=on+n=4+b=2 \
  > "$R/fused16.txt" 2>&1; echo "fused16 rc=$?"; pack
P32=fp32:plain:4096x1024,fp32:plain:16384x1024,fp32:fused:4096x1024
timeout 120 $SW --shapes $P32 --variants auto,b=1,b=2,reload=on+n=4,reload=on+n=4+b=1,reload=on+n=4+b=2,reload=on+n=8+b=1,reload=on+n=8+b=2 \
  > "$R/fp32.txt" 2>&1; echo "fp32 rc=$?"
cat "$R/plain16.txt" "$R/fused16.txt" "$R/fp32.txt" | grep -v '^shape'
pack && rm -rf "$R"
