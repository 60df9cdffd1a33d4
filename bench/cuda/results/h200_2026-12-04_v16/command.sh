#!/usr/bin/env bash
# Built from the working tree after c611a0f with v16's rule (ReloadWins / ReloadVectorsFor: the
# reload kernel for 16-bit rows with a residual of H 5120, 7168 and 8192 from 1024 rows, four
# vectors below 4096 rows at 7168 and 8192, and plain fp32 H 1024 below 4096 rows, one vector);
# .gpu/lib_v15 is c611a0f's library. Fifth nvidia-h200 call of the twenty-fourth session
# (2026-12-04): the host-side, automatic-choice and RmsNormCuda tests, the integration suite
# against normd --backend=cuda, v16 against v15 at the changed shapes (do_bench, 5 interleaved
# rounds, 1024 and 2048 rows), compare_kernels.py at 1024 rows (every H, dtype and mode), and
# normd_kernel_bench at 1, 8 and 1024 rows of bf16 H 4096 and 7168 (3 rounds).
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/v16.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 90 normd_gpu_tests --gtest_brief=1 \
  --gtest_filter='RmsNormCudaArguments.*:RmsNormCudaReload.Automatic*:RmsNormCudaWarpRow.AutomaticChoice:RmsNormCuda.*' \
  > "$R/gpu_tests.log" 2>&1; echo "tests rc=$?"; tail -2 "$R/gpu_tests.log"; pack
OUT=$R/integration STEPS=integration timeout 130 tests/gpu/run_server_h200.sh > "$R/integration.log" 2>&1
echo "integration rc=$?"; grep -a 'PASSED\|FAILED' "$R/integration.log" | tail -3; pack
S=bf16:fused:1024x5120,fp16:fused:1024x5120,bf16:fused:1024x7168,fp16:fused:1024x7168,bf16:fused:1024x8192,fp16:fused:1024x8192,fp32:plain:1024x1024
S=$S,bf16:fused:2048x7168,fp16:fused:2048x8192,fp32:plain:2048x1024
timeout 150 python3 bench/cuda/shape_sweep.py --lib .gpu/lib_v15/libnormd_cuda_kernels.so,.gpu/lib/libnormd_cuda_kernels.so \
  --anchors compile,triton --ceilings --rounds 5 --shapes $S --variants auto > "$R/ab.txt" 2>&1
echo "ab rc=$?"; grep -v '^shape' "$R/ab.txt"; pack
timeout 150 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so --rows 1024 \
  --budget-s 130 --csv "$R/grid1024.csv" > "$R/grid1024.log" 2>&1
echo "grid1024 rc=$?"; grep -a '^#' "$R/grid1024.log"; pack
for round in 1 2 3; do
  timeout 30 normd_kernel_bench --csv --dtypes bf16 --rows 1,8,1024 --hidden 4096,7168 --modes plain,fused \
    > "$R/targets$round.csv" 2>&1; echo "targets $round rc=$?"
done
pack && rm -rf "$R"
