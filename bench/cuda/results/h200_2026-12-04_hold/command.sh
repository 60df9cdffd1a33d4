#!/usr/bin/env bash
# Built from the working tree after 233aaf6: RmsNormOptions::Reload::kHold (the reload kernel's
# layout holding the row for one pass, the weight loaded with the row, up to 64 registers: the
# structure of Inductor's persistent reduction) and RmsNormOptions::rows_per_block (from
# results/h200_2026-12-03_rows_per_block). First nvidia-h200 call of the twenty-third session
# (2026-12-04). Question: is Inductor's 4-13% lead at H 1024 x 16384 rows its single pass with the
# row and the weight in registers (63 registers, one warp per row)? Prediction: hold at bf16 plain
# 16384 x 1024 with n = 4 (63 registers, no spill) and 1-2 rows per block within 2% of
# torch.compile (ours now 1.06-1.13 of its time). Also: SASS of both kernels (cuobjdump from
# Triton's bundle), ncu of the hold kernel, and hold at the near-tie shapes.
# Not kept as such (v15 took the warp-row kernel instead): the library side of kHold, and of call
# warp_row's kWarpRow, is ../h200_2026-12-04_warp_row/experiment.patch (against 233aaf6; the
# sweep variants reload=hold / reload=warp and the key b are that patch's). r/ keeps the SASS with
# the encodings stripped, and not Inductor's cache directory (its cubins and sources).
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/hold.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
SW="python3 bench/cuda/shape_sweep.py --lib .gpu/lib/libnormd_cuda_kernels.so --anchors compile,triton --ceilings --rounds 3"
P16=bf16:plain:16384x1024,fp16:plain:16384x1024,bf16:plain:65536x1024,fp16:plain:65536x1024
timeout 240 $SW --shapes $P16 --variants auto,reload=hold+n=4+b=1,reload=hold+n=4+b=2,reload=hold+n=4+b=4,reload=hold+n=4,reload=hold+n=2+b=1,reload=hold+n=2 \
  > "$R/plain16.txt" 2>&1; echo "plain16 rc=$?"; pack
TB=$(python3 -c "import triton,os;print(os.path.join(os.path.dirname(triton.__file__),'backends','nvidia','bin'))")
ls -la "$TB" > "$R/triton_bin.txt" 2>&1
CUOBJDUMP=$(command -v cuobjdump || echo "$TB/cuobjdump")
# SASS: ours (the 32-register reload build of four vectors, and the hold build), Inductor's.
"$CUOBJDUMP" -sass .gpu/lib/libnormd_cuda_kernels.so 2> "$R/cuobjdump_err.txt" | python3 -c '
import sys
keep = ("RmsNormReloadKernelI13__nv_bfloat16Li4ELb0ELNS1_10WeightKindE1ELi1024ELi2ELb0E",
        "RmsNormReloadKernelI13__nv_bfloat16Li4ELb0ELNS1_10WeightKindE1ELi256ELi4ELb1E")
on = False
for line in sys.stdin:
    if "Function :" in line:
        on = any(k in line for k in keep)
    if on:
        sys.stdout.write(line)
' > "$R/ours_bf16_n4.sass"; echo "sass ours rc=$? lines=$(wc -l < "$R/ours_bf16_n4.sass")"
export TORCHINDUCTOR_CACHE_DIR=$R/inductor_cache
timeout 120 python3 bench/cuda/inductor_probe.py --shapes bf16:plain:16384x1024,bf16:fused:16384x1024 --calls 3 \
  > "$R/inductor_probe.log" 2>&1; echo "probe rc=$?"
for c in $(find "$TORCHINDUCTOR_CACHE_DIR" -name '*.cubin'); do
  echo "== $c"; "$CUOBJDUMP" -sass "$c"
done > "$R/inductor.sass" 2>&1; echo "sass inductor lines=$(wc -l < "$R/inductor.sass")"
unset TORCHINDUCTOR_CACHE_DIR
pack
sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy
          --section SchedulerStats --section WarpStateStats --section InstructionStats)
timeout 100 ncu --clock-control none --kernel-name regex:triton --launch-skip 2 --launch-count 1 \
  "${sections[@]}" python3 bench/cuda/inductor_probe.py --shapes bf16:plain:16384x1024 --calls 4 \
  > "$R/ncu_compile_bf16_plain.txt" 2>&1; echo "ncu compile rc=$?"
for v in on hold; do
  timeout 100 ncu --clock-control none --kernel-name regex:RmsNorm --launch-skip 30 --launch-count 1 \
    "${sections[@]}" normd_kernel_bench --dtypes bf16 --modes plain --rows 16384 --hidden 1024 \
    --reload $v --vectors 4 > "$R/ncu_ours_${v}_bf16_plain.txt" 2>&1; echo "ncu ours $v rc=$?"
done
pack
F16=bf16:fused:16384x1024,fp16:fused:16384x1024,bf16:fused:65536x1024,fp16:fused:65536x1024
timeout 240 $SW --shapes $F16 --variants auto,reload=hold+n=4+b=1,reload=hold+n=4+b=2,reload=hold+n=4,reload=hold+n=2+b=1,reload=hold+n=2+b=2,reload=hold+n=2,reload=hold+n=1 \
  > "$R/fused16.txt" 2>&1; echo "fused16 rc=$?"; pack
P32=fp32:plain:16384x1024,fp32:fused:16384x1024,fp32:plain:65536x1024,fp32:fused:65536x1024
timeout 200 $SW --shapes $P32 --variants auto,reload=hold+n=4+b=1,reload=hold+n=4+b=2,reload=hold+n=4,reload=hold+n=2,reload=hold+n=1 \
  > "$R/fp32.txt" 2>&1; echo "fp32 rc=$?"; pack
TIES=bf16:fused:16384x4096,bf16:fused:16384x8192,bf16:fused:65536x4096,fp16:fused:16384x5120,bf16:plain:16384x7168,fp32:plain:16384x4096,fp32:plain:16384x8192,fp32:plain:65536x4096
timeout 200 $SW --shapes $TIES --variants auto,reload=hold,reload=hold+n=2,reload=hold+n=4 \
  > "$R/ties.txt" 2>&1; echo "ties rc=$?"
# torch.compile's figures at H 1024 the way the targets are measured (shape_sweep.py's compile
# anchor has read 40-55 us there since call h1024, its host side rather than its kernel).
timeout 100 python3 bench/cuda/compare_kernels.py --anchors compile,triton --rows 16384,65536 --hidden 1024 \
  > "$R/compare_h1024.txt" 2>&1; echo "compare rc=$?"
cat "$R/compare_h1024.txt" "$R/plain16.txt" "$R/fused16.txt" "$R/fp32.txt" "$R/ties.txt" | grep -v '^shape'
pack && rm -rf "$R"
