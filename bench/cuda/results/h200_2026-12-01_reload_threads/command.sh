#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, seventh session): the reload kernel's group size. bf16 and fp16
# plain rows, 1024-65536 rows x issue 3's H: the automatic choice (v8: the fewest whole warps
# holding the row in two vectors per thread) against the reload kernel forced in groups of 256,
# 512 and 1024 threads (vectors per thread: the fewest that fit), same run. Logs under $OUT/t.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/t; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/t.tgz" -C /tmp t; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$R/gpu.txt"
timeout 60 normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaArguments.*' > "$R/arguments_tests.log" 2>&1
echo "tests rc=$?"; tail -2 "$R/arguments_tests.log"
timeout 60 normd_kernel_bench --csv --dtypes bf16,fp16 --modes plain --rows 1024,4096,16384,65536 > "$R/auto.csv" 2>&1
echo "auto rc=$?"; pack
timeout 200 normd_kernel_bench --csv --dtypes bf16,fp16 --modes plain --rows 1024,4096,16384,65536 --reload on \
  --threads 256,512,1024 > "$R/threads.csv" 2>&1
echo "threads rc=$?"; pack
