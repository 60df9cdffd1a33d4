#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, seventh session), v8 final rule (fp32 plain H 5120 and the
# 1024-row fp32 shapes on the reload kernel too): the comparison against F.rms_norm, torch.compile
# and the Triton kernel for plain rows, rows >= 1024, every dtype, and the reload tests' host checks.
# Logs under $OUT/v8d.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/v8d; rm -rf "$R"; mkdir -p "$R"
timeout 30 normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaArguments.*' > "$R/arguments_tests.log" 2>&1
echo "tests rc=$?"; tail -1 "$R/arguments_tests.log"
timeout 170 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so --modes plain \
  --rows 1024,4096,16384,65536 --budget-s 160 --csv "$R/compare.csv" > "$R/compare.log" 2>&1
echo "compare rc=$?"; tail -1 "$R/compare.log"
tar czf "$OUT/v8d.tgz" -C /tmp v8d
