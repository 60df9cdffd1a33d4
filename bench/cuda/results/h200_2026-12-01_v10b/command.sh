#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, ninth session): v10's rules after call sweep2 (four vectors for
# plain 16-bit H 1024 from 16384 rows, plain fp32 H 5120 and 7168 at 4096 rows): the reload and
# host-side tests, compare_kernels.py at those six points twice, and normd_kernel_bench at bf16
# 1024 x 4096 (the <= 6 us target, back to back with PDL). Logs under $OUT/v10b.tgz.
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=/tmp/v10b; rm -rf "$R"; mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$R/gpu.txt"
timeout 90 normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaReload.*:RmsNormCudaArguments.*' \
  > "$R/tests.log" 2>&1; echo "tests rc=$?"; tail -2 "$R/tests.log"
C="python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so"
for round in 1 2; do
  timeout 60 $C --dtypes bf16,fp16 --modes plain --rows 16384,65536 --hidden 1024 \
    --csv "$R/compare_h1024_$round.csv" > "$R/compare_h1024_$round.log" 2>&1; echo "compare h1024 rc=$?"
  timeout 60 $C --dtypes fp32 --modes plain --rows 4096 --hidden 5120,7168 \
    --csv "$R/compare_fp32_$round.csv" > "$R/compare_fp32_$round.log" 2>&1; echo "compare fp32 rc=$?"
done
timeout 60 normd_kernel_bench --dtypes bf16 --modes plain --rows 1024 --hidden 4096 > "$R/bench_1024x4096.txt" 2>&1
echo "bench rc=$?"; cat "$R/bench_1024x4096.txt" | tail -3
tar czf "$OUT/v10b.tgz" -C /tmp v10b
cat "$R"/compare_*.csv | grep -v dtype
