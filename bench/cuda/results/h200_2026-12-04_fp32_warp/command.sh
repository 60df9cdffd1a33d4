#!/usr/bin/env bash
# Built from c611a0f with experiment.patch (not kept): the warp-row kernel's eight-vector build for
# fp32 rows of 1024 (library A: .gpu/lib, the row and the weight loaded together, 84/104
# registers, built for two blocks per multiprocessor); library B (.gpu/lib_b): the same with
# late_weights.patch on top, the weight loaded per vector after the reduction (52/78 registers).
# Third nvidia-h200 call of the twenty-fourth session (2026-12-04): the warp-row and argument tests
# on A, compute-sanitizer on every warp-row instance, fp32 H 1024 under do_bench (3 rounds,
# interleaved: the automatic choice before this change, eight vectors per lane at 2, 4 and 8 rows
# per block, on A and B), and the 1024-row 16-bit fused points of H 5120-8192 over the kernels
# that could take them.
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/fp32_warp.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 60 normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaWarpRow.*:RmsNormCudaArguments.*' \
  > "$R/gpu_tests.log" 2>&1; echo "tests rc=$?"; tail -3 "$R/gpu_tests.log"; pack
F='RmsNormCudaWarpRow.EveryVariantAtFewRows'
for tool in memcheck racecheck; do
  timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 normd_gpu_tests --gtest_filter="$F" \
    > "$R/$tool.log" 2>&1; echo "$tool rc=$?"; grep -a '^\[  PASSED\|^\[  FAILED\|SUMMARY' "$R/$tool.log"
done
pack
SW="python3 bench/cuda/shape_sweep.py --anchors compile,triton,frms --ceilings"
S32=fp32:plain:16384x1024,fp32:fused:16384x1024,fp32:plain:1024x1024,fp32:fused:1024x1024,fp32:plain:4096x1024,fp32:fused:4096x1024,fp32:plain:65536x1024,fp32:fused:65536x1024
timeout 240 $SW --lib .gpu/lib/libnormd_cuda_kernels.so,.gpu/lib_b/libnormd_cuda_kernels.so --rounds 3 \
  --shapes $S32 --variants auto,warp=on+n=8+b=2,warp=on+n=8,warp=on+n=8+b=8 > "$R/fp32.txt" 2>&1
echo "fp32 rc=$?"; grep -v '^shape' "$R/fp32.txt"; pack
F16=bf16:fused:1024x5120,fp16:fused:1024x5120,bf16:fused:1024x7168,fp16:fused:1024x7168,bf16:fused:1024x8192,fp16:fused:1024x8192
timeout 150 $SW --lib .gpu/lib/libnormd_cuda_kernels.so --rounds 3 --shapes $F16 \
  --variants auto,reload=on+n=1,reload=on+n=2,reload=on+n=4,lean=on,staging=on > "$R/fused1024.txt" 2>&1
echo "fused1024 rc=$?"; grep -v '^shape' "$R/fused1024.txt"; pack
pack && rm -rf "$R"
