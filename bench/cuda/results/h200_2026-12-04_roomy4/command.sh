#!/usr/bin/env bash
# Built from 5d7784e (v16): library A (.gpu/lib) as committed; library B (.gpu/lib_b) with
# experiment.patch, the reload kernel's two-vector build with a residual for blocks of up to 512
# threads built for four blocks per multiprocessor (32 registers, 12-24 bytes spilled) instead of
# three (40). Ninth nvidia-h200 call of the twenty-fourth session (2026-12-04), after call
# ncu1024 found Triton's 512-thread, 32-register programs at four per multiprocessor (1.94 waves
# at 1024 rows) where ours run three (2.59 waves): A against B under do_bench, 3 interleaved
# rounds, at every point where that build runs or could.
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/roomy4.tgz" r; }
( while sleep 45; do pack; done ) &
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
SW="python3 bench/cuda/shape_sweep.py --lib .gpu/lib/libnormd_cuda_kernels.so,.gpu/lib_b/libnormd_cuda_kernels.so --anchors triton --ceilings --rounds 3"
S1=bf16:fused:1024x7168,fp16:fused:1024x7168,bf16:fused:1024x8192,fp16:fused:1024x8192
timeout 100 $SW --shapes $S1 --variants auto,reload=on+n=2 > "$R/forced.txt" 2>&1; echo "forced rc=$?"; pack
S2=bf16:fused:1024x5120,fp16:fused:1024x5120,bf16:fused:1024x3000,bf16:fused:4096x5120,fp16:fused:4096x7168,bf16:fused:4096x8192
S2=$S2,bf16:fused:16384x5120,fp16:fused:16384x7168,bf16:fused:16384x8192,fp32:fused:4096x4096,fp32:fused:16384x3000
timeout 150 $SW --shapes $S2 --variants auto > "$R/auto.txt" 2>&1; echo "auto rc=$?"
kill %1; grep -v '^shape' "$R/forced.txt" "$R/auto.txt" | grep -v anchor | sed 's/^.*txt://'
pack && rm -rf "$R"
