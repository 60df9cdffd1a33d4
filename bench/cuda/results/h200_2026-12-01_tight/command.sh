#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, ninth session). (1) Same-run A/B of four vectors per thread for
# plain rows: .gpu/old (the 48-register build, weights preloaded) against .gpu/lib (32 registers,
# weights per vector, two 1024-thread blocks per multiprocessor), under do_bench beside the anchors,
# 3 interleaved rounds. (2) Our variants at the 1024-row points (and H 1024 at 4096 and 16384
# rows) again, 3 rounds, to choose vectors per thread by do_bench's figures. (3) The reload tests
# and memcheck of every reload variant. Logs under $OUT/t.tgz.
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=/tmp/t; rm -rf "$R"; mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$R/gpu.txt"
{ timeout 60 normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaReload.*:RmsNormCudaArguments.*'; echo "tests rc=$?"
  timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 normd_gpu_tests --gtest_brief=1 \
    --gtest_filter='RmsNormCudaReload.EveryVariantAtFewRows'; echo "memcheck rc=$?"; } > "$R/tests.log" 2>&1
tail -3 "$R/tests.log"
cd bench/cuda
L=../../.gpu/old/libnormd_cuda_kernels.so,../../.gpu/lib/libnormd_cuda_kernels.so
S=""
for r in 4096 16384 65536; do S+="fp32:plain:${r}x8192,fp32:plain:${r}x16384,bf16:plain:${r}x16384,"; done
S+="bf16:plain:4096x7168,bf16:plain:65536x7168,fp16:plain:16384x16384,fp16:plain:4096x7168,"
S+="fp32:plain:1024x8192,fp32:plain:1024x16384,bf16:plain:1024x1024,bf16:plain:1024x3000,bf16:plain:1024x5120,bf16:plain:1024x16384,fp16:plain:1024x4096"
timeout 200 python3 shape_sweep.py --lib "$L" --shapes "$S" --rounds 3 --variants auto,reload=on+n=4 \
  > "$R/ab_tight.txt" 2>&1; echo "ab rc=$?"
S=""
for d in bf16 fp16 fp32; do for m in plain fused; do
  for h in 1024 3000 4096 5120 7168 8192 16384; do S+="$d:$m:1024x$h,"; done
  S+="$d:$m:4096x1024,$d:$m:16384x1024,"
done; done
timeout 300 python3 shape_sweep.py --lib ../../.gpu/lib/libnormd_cuda_kernels.so --shapes "${S%,}" --rounds 3 \
  --variants auto,pdl=1,reload=on+n=1,reload=on+n=2,reload=on+n=4,reload=off > "$R/sweep_small.txt" 2>&1
echo "sweep rc=$?"
tar czf "$OUT/t.tgz" -C /tmp t
grep -c MISMATCH "$R"/*.txt
