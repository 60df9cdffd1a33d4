#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, seventh session), v8: the reload kernel (1024-thread blocks, one
# or two vectors per thread) in the automatic choice for plain 16-bit rows (H 1024-16384, >= 1024
# rows) and plain fp32 rows of H 1024 and 3000 (>= 4096 rows). (1) every GPU test; (2) the kernel
# bench, automatic choice against --reload off (the register kernel), plain rows, all dtypes, same
# run; (3) the comparison against F.rms_norm, torch.compile and the Triton kernel, plain rows,
# rows >= 1024. Logs under $OUT/v8.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/v8; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/v8.tgz" -C /tmp v8; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$R/gpu.txt"
timeout 300 normd_gpu_tests --gtest_brief=1 > "$R/gpu_tests.log" 2>&1
echo "tests rc=$?"; tail -3 "$R/gpu_tests.log"; pack
timeout 100 normd_kernel_bench --csv --modes plain --rows 1024,4096,16384,65536 --reload auto,off > "$R/bench.csv" 2>&1
echo "bench rc=$?"; pack
timeout 170 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so --modes plain \
  --rows 1024,4096,16384,65536 --budget-s 160 --csv "$R/compare.csv" > "$R/compare.log" 2>&1
echo "compare rc=$?"; tail -3 "$R/compare.log"; pack
