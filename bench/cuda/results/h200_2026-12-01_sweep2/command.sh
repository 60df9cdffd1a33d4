#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, ninth session): our variants under do_bench beside the anchors
# (bench/cuda/shape_sweep.py, 3 interleaved rounds) at the rows >= 4096 points v10 still misses:
# plain fp32 H 4096-8192 and H 1024, plain 16-bit H 1024 and 7168, 16-bit fused H 1024-7168.
# Library: v10 as committed (9a67cad). Logs under $OUT/s2.tgz.
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=/tmp/s2; rm -rf "$R"; mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$R/gpu.txt"
S="fp32:plain:4096x4096,fp32:plain:4096x5120,fp32:plain:4096x7168,fp32:plain:16384x1024,fp32:plain:16384x4096"
S+=",fp32:plain:16384x5120,fp32:plain:16384x8192,fp32:plain:65536x8192"
for d in bf16 fp16; do
  S+=",$d:plain:4096x1024,$d:plain:16384x1024,$d:plain:65536x1024,$d:plain:16384x7168,$d:plain:65536x7168"
  S+=",$d:fused:4096x3000,$d:fused:4096x7168,$d:fused:16384x1024,$d:fused:16384x4096,$d:fused:16384x5120,$d:fused:65536x5120"
done
V=auto,reload=on+n=1,reload=on+n=2,reload=on+n=4,reload=off,lean=on,staging=on
timeout 400 python3 bench/cuda/shape_sweep.py --lib .gpu/lib/libnormd_cuda_kernels.so --shapes "$S" --rounds 3 \
  --variants "$V" > "$R/sweep.txt" 2>&1; echo "sweep rc=$?"
tar czf "$OUT/s2.tgz" -C /tmp s2
grep -c MISMATCH "$R/sweep.txt"
