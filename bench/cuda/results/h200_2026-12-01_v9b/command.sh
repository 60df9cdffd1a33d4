#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, eighth session), v9b: the final kernels of the session (v9's
# fused rows on the reload kernel; four vectors per thread for plain 16-bit H 16384 and H 7168 from
# 4096 rows). (1) every GPU test; (2) memcheck and racecheck over every reload variant; (3) the
# kernel bench, plain 16-bit rows of H 7168 and 16384, the reload kernel's automatic vector count
# against two, same run; (4) the comparison against F.rms_norm, torch.compile and the Triton
# kernel, plain 16-bit rows >= 1024. Logs under $OUT/v9b.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/v9b; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/v9b.tgz" -C /tmp v9b; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$R/gpu.txt"
timeout 290 normd_gpu_tests --gtest_brief=1 > "$R/gpu_tests.log" 2>&1
echo "tests rc=$?"; tail -3 "$R/gpu_tests.log"; pack
{
  timeout 50 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 normd_gpu_tests \
    --gtest_brief=1 --gtest_filter='RmsNormCudaReload.EveryVariantAtFewRows'; echo "memcheck rc=$?"
  timeout 50 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests --gtest_brief=1 \
    --gtest_filter='RmsNormCudaReload.EveryVariantAtFewRows'; echo "racecheck rc=$?"
} > "$R/sanitizer.log" 2>&1
grep "rc=" "$R/sanitizer.log"; pack
timeout 40 normd_kernel_bench --csv --dtypes bf16,fp16 --modes plain --hidden 7168,16384 \
  --rows 1024,4096,16384,65536 --reload on --vectors 0,2 > "$R/bench.csv" 2>&1
echo "bench rc=$?"; pack
timeout 125 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so \
  --dtypes bf16,fp16 --modes plain --rows 1024,4096,16384,65536 --budget-s 115 \
  --csv "$R/compare_plain.csv" > "$R/compare_plain.log" 2>&1
echo "compare rc=$?"; tail -2 "$R/compare_plain.log"; pack
