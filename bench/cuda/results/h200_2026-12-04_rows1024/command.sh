#!/usr/bin/env bash
# Built from commit c611a0f (v15, unchanged). Fourth nvidia-h200 call of the twenty-fourth session
# (2026-12-04): the 1024-row points where ours trailed in calls final_a and fp32_warp, 5 rounds
# under do_bench, interleaved, the automatic choice beside the kernels that could take them:
# 16-bit rows with a residual of H 5120, 7168, 8192 (the register kernel now; the reload kernel of
# one, two or four vectors), fp32 plain rows of H 1024, 5120, 8192 and fp32 fused of H 5120.
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/rows1024.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
SW="python3 bench/cuda/shape_sweep.py --lib .gpu/lib/libnormd_cuda_kernels.so --anchors compile,triton,frms --ceilings --rounds 5"
F16=bf16:fused:1024x5120,fp16:fused:1024x5120,bf16:fused:1024x7168,fp16:fused:1024x7168,bf16:fused:1024x8192,fp16:fused:1024x8192
timeout 200 $SW --shapes $F16 --variants auto,reload=on+n=1,reload=on+n=2,reload=on+n=4 > "$R/fused16.txt" 2>&1
echo "fused16 rc=$?"; grep -v '^shape' "$R/fused16.txt"; pack
S32=fp32:plain:1024x1024,fp32:plain:1024x5120,fp32:plain:1024x8192,fp32:fused:1024x5120
timeout 200 $SW --shapes $S32 --variants auto,reload=on+n=1,reload=on+n=2,reload=on+n=4,lean=on > "$R/fp32.txt" 2>&1
echo "fp32 rc=$?"; grep -v '^shape' "$R/fp32.txt"; pack
pack && rm -rf "$R"
