#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, seventh session), v8c: one-wave reload launches of plain rows
# load their weights first (before the PDL wait) and hold them. (1) the reload kernel's tests and
# the shape rules' host tests (after the kernel's refactor); (2) the kernel bench at 1024 rows,
# 16-bit plain, weights first against late (RmsNormOptions::reload_late_weights), same run, three
# runs; (3) the integration suite against normd --backend=cuda with this library. Logs under
# $OUT/v8c.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/v8c; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/v8c.tgz" -C /tmp v8c; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > "$R/gpu.txt"; which perf ncu nsys >> "$R/gpu.txt" 2>&1
timeout 100 normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaReload.*:RmsNormCudaArguments.*' \
  > "$R/reload_tests.log" 2>&1
echo "tests rc=$?"; tail -2 "$R/reload_tests.log"; pack
for i in 1 2 3; do
  timeout 40 normd_kernel_bench --csv --dtypes bf16,fp16 --modes plain --rows 1024 --reload-weights first,late \
    > "$R/weights_$i.csv" 2>&1
  echo "bench $i rc=$?"
done
pack
OUT=$R/integration STEPS=integration timeout 240 tests/gpu/run_server_h200.sh > "$R/integration.log" 2>&1
echo "integration rc=$?"; tail -3 "$R/integration.log"; pack
