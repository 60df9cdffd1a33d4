#!/usr/bin/env bash
# Built from commit 14f658b (the push kernel in the automatic choice).
# Third nvidia-h200 call of the twentieth session (2026-12-03): the final library. Every
# normd_gpu_tests test whose kernels the automatic choice can now route to the push kernel (all
# but the forced staged, lean and reload sweeps, which call push_d runs); the small-batch
# target shapes, three rounds, with the push off beside them; the integration suite against
# normd --backend=cuda; the comparison script at rows 1 and 8.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/push_c.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 300 stdbuf -oL -eL normd_gpu_tests \
  --gtest_filter='-RmsNormCudaStaged.*:RmsNormCudaLean.*:RmsNormCudaReload.*' > "$R/gpu_tests.log" 2>&1
echo "tests rc=$?"; grep -a '^\[  PASSED\|^\[  FAILED\|tests ran' "$R/gpu_tests.log" | tail -5
pack
for round in 1 2 3; do
  timeout 20 normd_kernel_bench --csv --dtypes bf16 --rows 1,8 --hidden 4096,7168 --modes plain,fused \
    --push auto,off > "$R/targets$round.csv" 2>&1
  echo "targets $round rc=$?"
done
pack
OUT=$R/integration STEPS=integration timeout 130 tests/gpu/run_server_h200.sh > "$R/integration.log" 2>&1
echo "integration rc=$?"; grep -a 'PASSED\|FAILED' "$R/integration.log" | tail -3; pack
timeout 120 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so --rows 1,8 \
  --budget-s 100 --csv "$R/compare.csv" > "$R/compare.log" 2>&1
echo "compare rc=$?"; tail -2 "$R/compare.log"
pack && rm -rf "$R"
