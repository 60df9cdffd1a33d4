#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, eighth session), wide_fused: the reload kernel's four-vector
# variant (one block of up to 1024 threads per SM, 63-64 registers) for rows with a residual too.
# (1) the reload kernel's and the host-only GPU tests; (2) the kernel bench, fused rows >= 1024,
# the reload kernel with its automatic vector count against four per thread (16-bit H 4096-16384;
# fp32 H 8192 and 16384 at 1024 and 4096 rows, where torch.compile leads). Logs under
# $OUT/wf.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/wf; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/wf.tgz" -C /tmp wf; }
timeout 100 normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaReload.*:RmsNormCudaArguments.*' \
  > "$R/reload_tests.log" 2>&1
echo "tests rc=$?"; tail -2 "$R/reload_tests.log"; pack
timeout 80 normd_kernel_bench --csv --dtypes bf16,fp16 --modes fused --hidden 4096,5120,7168,8192,16384 \
  --rows 1024,4096,16384,65536 --reload on --vectors 0,4 > "$R/fused16.csv" 2>&1
echo "fused16 rc=$?"; pack
timeout 30 normd_kernel_bench --csv --dtypes fp32 --modes fused --hidden 8192,16384 --rows 1024,4096 \
  --reload auto,on --vectors 0,4 > "$R/fused32.csv" 2>&1
echo "fused32 rc=$?"; pack
