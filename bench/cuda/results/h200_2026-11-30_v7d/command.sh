#!/usr/bin/env bash
# Fourth nvidia-h200 call (2026-11-30, third session), the final v7 library: the cluster kernel for
# rows that move >= 96 KB in launches of few rows, the weight through shared memory for one-wave
# launches with a residual. All GPU tests; the kernel bench over issue 3's grid (automatic choice);
# the comparison against F.rms_norm, torch.compile and the Triton kernel at rows 1, 8, 128, 1024.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/v7d.tgz" r; }  # after every step: a call cut short keeps what ran
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 150 normd_kernel_bench --csv > "$R/bench.csv" 2>&1
echo "bench rc=$?"; pack
timeout 170 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so --rows 1,8,128,1024 \
  --budget-s 150 --csv "$R/compare.csv" > "$R/compare.log" 2>&1
echo "compare rc=$?"; tail -3 "$R/compare.log"; pack
timeout 250 normd_gpu_tests --gtest_brief=1 > "$R/gpu_tests.log" 2>&1
echo "tests rc=$?"; tail -3 "$R/gpu_tests.log"
pack && rm -rf "$R"
