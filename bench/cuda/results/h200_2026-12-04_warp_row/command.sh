#!/usr/bin/env bash
# Built from the working tree after 233aaf6 (as call hold, plus RmsNormWarpRowKernel, reached as
# RmsNormOptions::Reload::kWarpRow). Second nvidia-h200 call of the twenty-third session
# (2026-12-04). Call hold: the reload kernel holding the row for one pass (n = 4, 4 rows per
# block) took 16-bit plain 16384 x 1024 from 1.09-1.10 of torch.compile's time to 1.01-1.02; ncu:
# Inductor's kernel issues 4.3M instructions there, ours 7.9M (run-time group arithmetic, the
# generic block reduction, 64-bit row indexing). The warp-row kernel fixes 32 threads per row at
# compile time (56 registers for bf16 plain n = 4, 64 with a residual, no spill). Prediction: at
# most torch.compile's time at 16384 x 1024 (16-bit plain and fused), no loss at 65536 rows.
# The library and sweep side of this call is experiment.patch (against 233aaf6); v15 made the
# kernel its own option (RmsNormOptions::WarpRow; shape_sweep.py's warp=on+b=N). A first attempt
# of this call was cut off when the machine was taken back; this is the second.
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/warp_row.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
SW="python3 bench/cuda/shape_sweep.py --lib .gpu/lib/libnormd_cuda_kernels.so --anchors compile,triton --ceilings"
P16=bf16:plain:16384x1024,fp16:plain:16384x1024
timeout 150 $SW --rounds 5 --shapes $P16 --variants auto,reload=hold+n=4+b=4,reload=warp+n=4+b=1,reload=warp+n=4+b=2,reload=warp+n=4+b=4,reload=warp+n=4 \
  > "$R/plain16.txt" 2>&1; echo "plain16 rc=$?"; pack
F16=bf16:fused:16384x1024,fp16:fused:16384x1024
timeout 150 $SW --rounds 5 --shapes $F16 --variants auto,reload=hold+n=2,reload=hold+n=4+b=2,reload=warp+n=4+b=1,reload=warp+n=4+b=2,reload=warp+n=4+b=4,reload=warp+n=4 \
  > "$R/fused16.txt" 2>&1; echo "fused16 rc=$?"; pack
MORE=bf16:plain:65536x1024,fp16:plain:65536x1024,bf16:fused:65536x1024,fp16:fused:65536x1024,bf16:plain:4096x1024,fp16:plain:4096x1024,bf16:fused:4096x1024,fp16:fused:4096x1024,bf16:plain:1024x1024,bf16:fused:1024x1024
timeout 220 $SW --rounds 3 --shapes $MORE --variants auto,reload=warp+n=4+b=1,reload=warp+n=4+b=2,reload=warp+n=4+b=4,reload=warp+n=4 \
  > "$R/more.txt" 2>&1; echo "more rc=$?"; pack
sections=(--section SpeedOfLight --section LaunchStats --section Occupancy --section SchedulerStats
          --section WarpStateStats --section InstructionStats)
timeout 60 ncu --clock-control none --kernel-name regex:RmsNorm --launch-skip 30 --launch-count 1 \
  "${sections[@]}" normd_kernel_bench --dtypes bf16 --modes plain --rows 16384 --hidden 1024 \
  --reload warp --vectors 4 > "$R/ncu_ours_warp_bf16_plain.txt" 2>&1; echo "ncu warp rc=$?"
grep -E ' Duration|Registers Per|Block Size|Executed Instructions  |Achieved Occ' "$R/ncu_ours_warp_bf16_plain.txt"
cat "$R/plain16.txt" "$R/fused16.txt" "$R/more.txt" | grep -v '^shape'
pack && rm -rf "$R"
