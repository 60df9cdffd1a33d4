#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, ninth session): our kernel's variants timed under do_bench
# beside the anchors (bench/cuda/shape_sweep.py, new) at the points the comparison misses most
# (1024 rows; H 1024 at 4096 and 16384 rows; fp32 plain H 8192 and 16384), Inductor's generated
# code at three of them, and ncu of torch.compile's kernel and ours at fp32 plain 65536 x 16384.
# Logs under $OUT/s1.tgz.
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=/tmp/s1; rm -rf "$R"; mkdir -p "$R"
cd bench/cuda
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$R/gpu.txt"
V=auto,pdl=1,reload=on+n=1,reload=on+n=2,reload=on+n=4,reload=off,lean=on
S=""
for d in bf16 fp16 fp32; do for m in plain fused; do
  for h in 1024 3000 4096 5120 7168 8192 16384; do S+="$d:$m:1024x$h,"; done
  S+="$d:$m:4096x1024,$d:$m:16384x1024,"
done; done
timeout 290 python3 shape_sweep.py --lib ../../.gpu/lib/libnormd_cuda_kernels.so --shapes "${S%,}" \
  --variants "$V" > "$R/sweep_small.txt" 2>&1; echo "sweep_small rc=$?"
S2=fp32:plain:4096x8192,fp32:plain:16384x8192,fp32:plain:65536x8192,fp32:plain:4096x16384,fp32:plain:16384x16384,fp32:plain:65536x16384
timeout 120 python3 shape_sweep.py --lib ../../.gpu/lib/libnormd_cuda_kernels.so --shapes "$S2" \
  --anchors compile,triton --variants auto,staging=off,reload=on+n=2,reload=on+n=4,lean=on,reload=off+staging=off \
  > "$R/sweep_fp32.txt" 2>&1; echo "sweep_fp32 rc=$?"
TORCH_LOGS=output_code timeout 90 python3 inductor_probe.py --calls 2 \
  --shapes bf16:plain:1024x1024,fp32:plain:4096x1024,fp32:plain:65536x16384 > "$R/inductor_code.log" 2>&1
echo "inductor rc=$?"
sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy
          --section SchedulerStats --section WarpStateStats)
timeout 100 ncu --clock-control none --kernel-name regex:triton --launch-skip 2 --launch-count 1 "${sections[@]}" \
  python3 inductor_probe.py --shapes fp32:plain:65536x16384 --calls 4 > "$R/ncu_compile.txt" 2>&1; echo "ncu compile rc=$?"
for v in "auto 0" "on 4"; do set -- $v
  timeout 60 ncu --clock-control none --kernel-name regex:RmsNorm --launch-skip 30 --launch-count 1 "${sections[@]}" \
    normd_kernel_bench --dtypes fp32 --modes plain --rows 65536 --hidden 16384 --reload $1 --vectors $2 \
    > "$R/ncu_ours_reload_$1.txt" 2>&1; echo "ncu ours $1 rc=$?"
done
tar czf "$OUT/s1.tgz" -C /tmp s1
grep -h "ratio\|MISMATCH" "$R"/sweep_*.txt | head -3; tail -5 "$R/sweep_fp32.txt"
