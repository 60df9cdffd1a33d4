#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, eighth session), v9: rows with a residual on the reload kernel
# (ReloadWins / ReloadVectorsFor from call roomy). (1) the reload kernel's and the host-only GPU
# tests; (2) memcheck and racecheck over every reload variant; (3) the kernel bench, fused rows
# >= 1024, the automatic choice against --reload off (what ran before), same run; (4) the
# comparison against F.rms_norm, torch.compile and the Triton kernel, fused rows >= 1024, every
# dtype. Logs under $OUT/v9.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/v9; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/v9.tgz" -C /tmp v9; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$R/gpu.txt"
timeout 90 normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaReload.*:RmsNormCudaArguments.*' \
  > "$R/reload_tests.log" 2>&1
echo "tests rc=$?"; tail -2 "$R/reload_tests.log"; pack
{
  timeout 60 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 normd_gpu_tests \
    --gtest_brief=1 --gtest_filter='RmsNormCudaReload.EveryVariantAtFewRows'; echo "memcheck rc=$?"
  timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests --gtest_brief=1 \
    --gtest_filter='RmsNormCudaReload.EveryVariantAtFewRows'; echo "racecheck rc=$?"
} > "$R/sanitizer.log" 2>&1
grep "rc=" "$R/sanitizer.log"; pack
timeout 120 normd_kernel_bench --csv --modes fused --rows 1024,4096,16384,65536 --reload auto,off \
  > "$R/bench.csv" 2>&1
echo "bench rc=$?"; pack
timeout 200 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so \
  --modes fused --rows 1024,4096,16384,65536 --budget-s 190 --csv "$R/compare_fused.csv" \
  > "$R/compare_fused.log" 2>&1
echo "compare rc=$?"; tail -2 "$R/compare_fused.log"; pack
