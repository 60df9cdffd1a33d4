#!/usr/bin/env bash
# Built from 5d7784e (v16, the final library). Eighth nvidia-h200 call of the twenty-fourth
# session (2026-12-04): ncu of ours and of the seed Triton kernel at the two 1024-row points where
# Triton led most in call v16_grid (fp32 plain 1024 x 5120: 1.18 of its time; bf16 fused
# 1024 x 8192: 1.08), and of the reload kernel of two vectors at the first (one launch each,
# ncu's own cache flush; inductor_probe.py --anchor triton runs compare_kernels.py's kernel).
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/ncu1024.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
S=(--section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis
   --section WarpStateStats --section SchedulerStats)
N="ncu --clock-control none --launch-count 1"
KB() { timeout 60 $N --kernel-name regex:RmsNorm --launch-skip 30 "${S[@]}" normd_kernel_bench "$@"; }
TR() { timeout 90 $N --kernel-name regex:seed --launch-skip 2 "${S[@]}" \
  python3 bench/cuda/inductor_probe.py --anchor triton --calls 4 --shapes "$1"; }
KB --dtypes fp32 --modes plain --rows 1024 --hidden 5120 > "$R/ours_fp32_plain_5120.txt" 2>&1; echo "1 rc=$?"
KB --dtypes fp32 --modes plain --rows 1024 --hidden 5120 --reload on --vectors 2 > "$R/ours_reload2_fp32_plain_5120.txt" 2>&1; echo "2 rc=$?"
TR fp32:plain:1024x5120 > "$R/triton_fp32_plain_5120.txt" 2>&1; echo "3 rc=$?"; pack
KB --dtypes bf16 --modes fused --rows 1024 --hidden 8192 > "$R/ours_bf16_fused_8192.txt" 2>&1; echo "4 rc=$?"
TR bf16:fused:1024x8192 > "$R/triton_bf16_fused_8192.txt" 2>&1; echo "5 rc=$?"; pack
for f in "$R"/ours_* "$R"/triton_*; do
  echo "== $(basename $f)"
  grep -aE ' Duration|DRAM Throughput|Registers Per|Block Size|Grid Size|Waves Per SM|Achieved Occupancy|Theoretical Occupancy|L2 Hit Rate|L1/TEX Hit|Mem Busy|Executed Ipc A|No Eligible|Warp Cycles Per Issued' "$f" | sed 's/  */ /g'
done
pack && rm -rf "$R"
