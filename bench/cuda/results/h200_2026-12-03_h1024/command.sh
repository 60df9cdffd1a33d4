#!/usr/bin/env bash
# Built from commit e7660ff (the v13 library, unchanged). Second nvidia-h200 call of the
# twenty-second session (2026-12-03): why H 1024 at 16384 rows is 6-13% behind torch.compile and
# 3-10% behind a copy of the same bytes (call ceiling). Inductor's generated code at the six
# points, ncu of its kernel and ours at bf16 plain and fp32 fused, and our variants beside
# torch.compile under do_bench (shape_sweep.py, 3 interleaved rounds).
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/h1024.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
S16=bf16:plain:16384x1024,fp16:plain:16384x1024,bf16:fused:16384x1024,fp16:fused:16384x1024
S32=fp32:plain:16384x1024,fp32:fused:16384x1024
TORCH_LOGS=output_code timeout 120 python3 bench/cuda/inductor_probe.py --shapes $S16,$S32 --calls 3 \
  > "$R/inductor_code.log" 2>&1; echo "inductor code rc=$?"
sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy
          --section SchedulerStats --section WarpStateStats)
for spec in bf16:plain:16384x1024 fp32:fused:16384x1024; do
  IFS=: read -r dt mode dims <<< "$spec"; tag="${dt}_${mode}_${dims}"
  timeout 100 ncu --clock-control none --kernel-name regex:triton --launch-skip 2 --launch-count 1 \
    "${sections[@]}" python3 bench/cuda/inductor_probe.py --shapes "$spec" --calls 4 \
    > "$R/ncu_compile_$tag.txt" 2>&1; echo "ncu compile $tag rc=$?"
  timeout 100 ncu --clock-control none --kernel-name regex:RmsNorm --launch-skip 30 --launch-count 1 \
    "${sections[@]}" normd_kernel_bench --dtypes "$dt" --modes "$mode" --rows "${dims%x*}" --hidden "${dims#*x}" \
    > "$R/ncu_ours_$tag.txt" 2>&1; echo "ncu ours $tag rc=$?"
done
pack
SW="python3 bench/cuda/shape_sweep.py --lib .gpu/lib/libnormd_cuda_kernels.so --anchors compile,triton --rounds 3"
timeout 200 $SW --shapes $S16 --variants auto,reload=on+n=1,reload=on+n=2,reload=on+n=4,reload=off+n=1,reload=off+n=2,reload=off+n=4,lean=on,staging=on \
  > "$R/sweep16.txt" 2>&1; echo "sweep16 rc=$?"
timeout 120 $SW --shapes $S32 --variants auto,reload=on+n=1,reload=on+n=2,reload=on+n=4,reload=on+n=8,reload=off+n=2,reload=off+n=4,lean=on,staging=on \
  > "$R/sweep32.txt" 2>&1; echo "sweep32 rc=$?"
cat "$R/sweep16.txt" "$R/sweep32.txt"
pack && rm -rf "$R"
