#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, eighth session), v9d: the final kernels (v9b plus four vectors
# per thread with a residual at H 16384, and fp32 H 8192 at 1024 rows). (1) the reload kernel's
# and the host-only GPU tests; (2) memcheck and racecheck over every reload variant; (3) the kernel
# bench, fused rows of H 8192 and 16384, the automatic choice against --reload off, same run; (4)
# the comparison against F.rms_norm, torch.compile and the Triton kernel at those shapes, every
# dtype. Logs under $OUT/v9d.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/v9d; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/v9d.tgz" -C /tmp v9d; }
timeout 100 normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaReload.*:RmsNormCudaArguments.*' \
  > "$R/reload_tests.log" 2>&1
echo "tests rc=$?"; tail -2 "$R/reload_tests.log"; pack
{
  timeout 50 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 normd_gpu_tests \
    --gtest_brief=1 --gtest_filter='RmsNormCudaReload.EveryVariantAtFewRows'; echo "memcheck rc=$?"
  timeout 50 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests --gtest_brief=1 \
    --gtest_filter='RmsNormCudaReload.EveryVariantAtFewRows'; echo "racecheck rc=$?"
} > "$R/sanitizer.log" 2>&1
grep "rc=" "$R/sanitizer.log"; pack
timeout 40 normd_kernel_bench --csv --modes fused --hidden 8192,16384 --rows 1024,4096,16384,65536 \
  --reload auto,off > "$R/bench.csv" 2>&1
echo "bench rc=$?"; pack
timeout 110 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so \
  --modes fused --hidden 8192,16384 --rows 1024,4096,16384,65536 --budget-s 100 \
  --csv "$R/compare_fused.csv" > "$R/compare_fused.log" 2>&1
echo "compare rc=$?"; tail -2 "$R/compare_fused.log"; pack
