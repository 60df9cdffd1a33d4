#!/usr/bin/env bash
# The staged kernel's two GPU calls (2026-11-30), logs under $OUT. On the GPU machine, from the
# repository root, with .gpu carried:
#   bash bench/cuda/run_staged_ab.sh ab        first call: correctness (every GPU test,
#       compute-sanitizer on the staged in-place test among others), an A/B of the staged and the
#       register kernels in the same run shape by shape, and a sweep of the staged stage count.
#   bash bench/cuda/run_staged_ab.sh confirm   second call, after the automatic choice was set
#       from the A/B: every GPU test, the CUDA backend's integration suite, the automatic choice
#       against the register kernel at H = 16384 for all dtypes, and the anchors (PyTorch,
#       torch.compile, Triton) at H 16384.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/.gpu/env.sh"
OUT=${OUT:-$root/out}
mkdir -p "$OUT"
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }
stamp start; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
if [[ "${1:-ab}" == confirm ]]; then
  stamp tests
  timeout 200 normd_gpu_tests --gtest_brief=1 > "$OUT/gpu_tests.log" 2>&1; echo "gpu tests rc=$?"
  tail -4 "$OUT/gpu_tests.log"
  stamp "integration, CUDA backend"
  NORMD_BINARY=$(command -v normd) NORMD_TEST_BACKEND=cuda timeout 200 normd_integration_test \
    --gtest_brief=1 > "$OUT/integration_cuda.log" 2>&1; echo "integration rc=$?"
  tail -4 "$OUT/integration_cuda.log"
  stamp "automatic choice vs register kernel, H 16384"
  timeout 90 normd_kernel_bench --csv --staging off,auto --rows 1024,4096,16384,65536 --hidden 16384 \
    > "$OUT/auto_vs_register.csv" 2>&1; echo "bench rc=$?"
  stamp "anchors"
  timeout 240 python3 "$root/bench/cuda/compare_kernels.py" --lib "$root/.gpu/lib/libnormd_cuda_kernels.so" \
    --dtypes bf16,fp16,fp32 --rows 1024,4096,16384,65536 --hidden 16384 --budget-s 200 --csv "$OUT/compare.csv" \
    > "$OUT/compare.log" 2>&1; echo "compare rc=$?"
  tail -30 "$OUT/compare.log"
  stamp done
  exit 0
fi
stamp tests
timeout 240 normd_gpu_tests --gtest_brief=1 > "$OUT/gpu_tests.log" 2>&1; echo "gpu tests rc=$?"
tail -8 "$OUT/gpu_tests.log"
stamp "A/B staged vs register"
timeout 300 normd_kernel_bench --csv --staging off,on --dtypes bf16,fp32 --rows 1024,4096,16384,65536 \
  > "$OUT/staged_ab.csv" 2>&1; echo "A/B rc=$?"
stamp "stage sweep"
timeout 120 normd_kernel_bench --staging on --stages 2,3,4,6,8 --dtypes bf16 --rows 1024,65536 \
  --hidden 1024,4096,8192,16384 --modes plain,fused > "$OUT/stages.log" 2>&1; echo "stages rc=$?"
stamp sanitizer
STEPS=sanitizer OUT="$OUT" bash "$root/bench/cuda/run_h200.sh" > /dev/null 2>&1
tail -12 "$OUT/sanitizer.log"
stamp done
