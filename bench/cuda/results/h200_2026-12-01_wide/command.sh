#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, eighth session), wide: the reload kernel with four vectors per
# thread (plain rows; one block of up to 1024 threads per SM, up to 64 registers), the layout
# Inductor generates for fp32 rows of 16384 (call inductor_fp32). (1) the reload kernel's and the
# host-only GPU tests; (2) the kernel bench, plain rows >= 1024: fp32 H 4096-16384, the automatic
# choice against the reload kernel with its default and with four vectors per thread; bf16 H
# 7168-16384, two against four. Logs under $OUT/wide.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/wide; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/wide.tgz" -C /tmp wide; }
timeout 100 normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaReload.*:RmsNormCudaArguments.*' \
  > "$R/reload_tests.log" 2>&1
echo "tests rc=$?"; tail -2 "$R/reload_tests.log"; pack
timeout 120 normd_kernel_bench --csv --dtypes fp32 --modes plain --hidden 4096,5120,7168,8192,16384 \
  --rows 1024,4096,16384,65536 --reload auto,on --vectors 0,4 > "$R/fp32.csv" 2>&1
echo "fp32 rc=$?"; pack
timeout 60 normd_kernel_bench --csv --dtypes bf16 --modes plain --hidden 7168,8192,16384 \
  --rows 1024,4096,16384,65536 --reload on --vectors 2,4 > "$R/bf16.csv" 2>&1
echo "bf16 rc=$?"; pack
