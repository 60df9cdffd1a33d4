#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, seventh session): the reload kernel (RmsNormReloadKernel,
# RmsNormOptions::reload_rows, now RmsNormOptions::reload) forced, against the automatic choice,
# over issue 3's rows >= 1024 grid for bf16 and fp32: its tests, then normd_kernel_bench with the
# automatic choice and with the reload kernel at 1, 2 and 4 vectors per thread (same run). Logs under $OUT/r.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/r.tgz" -C /tmp r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$R/gpu.txt"
timeout 240 normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaReload.*:RmsNormCudaArguments.*' \
  > "$R/reload_tests.log" 2>&1
echo "tests rc=$?"; tail -3 "$R/reload_tests.log"; pack
timeout 120 normd_kernel_bench --csv --dtypes bf16,fp32 --rows 1024,4096,16384,65536 > "$R/auto.csv" 2>&1
echo "auto rc=$?"; pack
timeout 330 normd_kernel_bench --csv --dtypes bf16,fp32 --rows 1024,4096,16384,65536 --reload on \
  --vectors 1,2,4 > "$R/reload.csv" 2>&1
echo "reload rc=$?"; pack
