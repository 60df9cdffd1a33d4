#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, ninth session): two vectors per thread with a residual in 32
# registers (the second pass loading each vector at its use; .gpu/lib) against the 40-register build
# (all loads first; .gpu/old = 3ab6217), same run under do_bench beside the anchors, 2 interleaved
# rounds (bench/cuda/shape_sweep.py); the reload tests on the new build first. Logs under $OUT/f.tgz.
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=/tmp/f; rm -rf "$R"; mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$R/gpu.txt"
timeout 70 normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaReload.*' > "$R/tests.log" 2>&1
echo "tests rc=$?"; tail -1 "$R/tests.log"
S=""
for d in bf16 fp16; do
  S+="$d:fused:1024x5120,$d:fused:4096x3000,$d:fused:4096x4096,$d:fused:4096x5120,$d:fused:4096x7168,$d:fused:4096x8192,"
  S+="$d:fused:16384x1024,$d:fused:16384x4096,$d:fused:16384x5120,$d:fused:16384x7168,$d:fused:65536x4096,$d:fused:65536x5120,$d:fused:65536x8192,"
done
S+="fp32:fused:4096x4096,fp32:fused:65536x4096"
timeout 230 python3 bench/cuda/shape_sweep.py --lib .gpu/old/libnormd_cuda_kernels.so,.gpu/lib/libnormd_cuda_kernels.so \
  --shapes "$S" --rounds 2 --anchors triton,compile --variants auto,reload=on+n=2 > "$R/ab.txt" 2>&1; echo "ab rc=$?"
tar czf "$OUT/f.tgz" -C /tmp f
grep -c MISMATCH "$R/ab.txt"
