#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, eighth session): how much of each do_bench figure is the
# kernel itself (bench/cuda/kernel_times.py), at the 1024- and 4096-row points where our kernel
# bench and do_bench disagree most, and two large shapes as controls. Logs under $OUT/kt.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/kt; rm -rf "$R"; mkdir -p "$R"
timeout 200 python3 bench/cuda/kernel_times.py --lib .gpu/lib/libnormd_cuda_kernels.so --reps 50 \
  --shapes bf16:plain:1024x1024,bf16:plain:1024x4096,bf16:plain:1024x8192,fp32:plain:1024x1024,fp32:plain:1024x5120,fp32:plain:4096x1024,bf16:fused:1024x7168,bf16:plain:65536x4096,fp32:plain:16384x16384 \
  > "$R/kernel_times.txt" 2>&1
echo "kernel_times rc=$?"; tail -40 "$R/kernel_times.txt"
tar czf "$OUT/kt.tgz" -C /tmp kt
