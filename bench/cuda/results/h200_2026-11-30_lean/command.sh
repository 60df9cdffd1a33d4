#!/usr/bin/env bash
# One nvidia-h200 call (2026-11-30): the lean two-pass kernel's tests, then the kernel bench with the
# automatic choice, the two-pass kernel and the lean two-pass kernel side by side (each with and
# without programmatic dependent launch). Run from the repository root with .gpu carried.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 240 normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaLean.*:RmsNormCudaStaged.InPlace' > "$R/lean_tests.log" 2>&1
echo "tests rc=$?"; tail -4 "$R/lean_tests.log"
timeout 200 normd_kernel_bench --csv --two-pass --lean --dtypes bf16,fp16,fp32 --rows 1024,4096,16384,65536 > "$R/lean_ab.csv" 2>&1
echo "bench rc=$?"
timeout 100 normd_kernel_bench --csv --two-pass --lean --dtypes bf16,fp32 --rows 1024,16384 --hidden 32768,65536 > "$R/lean_ab_large.csv" 2>&1
echo "bench large rc=$?"
tar -C "$OUT" -czf "$OUT/lean.tgz" r && rm -rf "$R"
