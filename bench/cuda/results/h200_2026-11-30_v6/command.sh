#!/usr/bin/env bash
# One nvidia-h200 call (2026-11-30), v6 (the lean two-pass kernel in the automatic choice): all GPU
# tests, the kernel bench over issue 3's grid with the automatic choice and with the lean kernel
# off (same run), and the comparison against F.rms_norm, torch.compile and the Triton kernel.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 330 normd_gpu_tests --gtest_brief=1 > "$R/gpu_tests.log" 2>&1
echo "tests rc=$?"; tail -3 "$R/gpu_tests.log"
timeout 150 normd_kernel_bench --csv --lean auto,off > "$R/bench.csv" 2>&1
echo "bench rc=$?"
timeout 270 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so --rows 1024,4096,16384,65536 \
  --budget-s 250 --csv "$R/compare.csv" > "$R/compare.log" 2>&1
echo "compare rc=$?"; tail -3 "$R/compare.log"
tar -C "$OUT" -czf "$OUT/v6.tgz" r && rm -rf "$R"
