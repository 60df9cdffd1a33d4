#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, eighth session): the reload kernel's two-vector residual
# variant given 40 registers in blocks of up to 512 threads (no spills; under 32 it spilled 12-24
# bytes). (1) the reload kernel's GPU tests; (2) the kernel bench, fused rows >= 1024, the
# automatic choice against the reload kernel with one and with two vectors per thread (and the
# register kernel with two), same run. Logs under $OUT/roomy.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/roomy; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/roomy.tgz" -C /tmp roomy; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$R/gpu.txt"
timeout 90 normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaReload.*:RmsNormCudaArguments.*' \
  > "$R/reload_tests.log" 2>&1
echo "tests rc=$?"; tail -2 "$R/reload_tests.log"; pack
timeout 220 normd_kernel_bench --csv --dtypes bf16,fp16 --modes fused --rows 1024,4096,16384,65536 \
  --reload auto,on --vectors 0,2 > "$R/bench16.csv" 2>&1
echo "bench16 rc=$?"; pack
timeout 60 normd_kernel_bench --csv --dtypes fp32 --hidden 1024,3000,4096 --modes fused \
  --rows 1024,4096,16384,65536 --reload auto,on --vectors 0,2 > "$R/bench32.csv" 2>&1
echo "bench32 rc=$?"; pack
