#!/usr/bin/env bash
# Third nvidia-h200 call (2026-11-30, third session): the weight through shared memory (cp.async at
# the start of each block, read after the reduction) for one-wave late-weight launches, A/B against
# reading it from global memory after the reduction, at 1024 rows (all dtypes, modes and H) and five
# times at bf16 1024 x 4096 plain; all GPU tests (the sweep's 989-row launches take the new path).
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/v7c.tgz" r; }  # after every step: a call cut short keeps what ran
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
for i in 1 2 3 4 5; do
  timeout 15 normd_kernel_bench --csv --dtypes bf16 --modes plain --rows 1024 --hidden 4096 --shared-weights on,off \
    | grep -v '^#\|^dtype' >> "$R/bf16_1024x4096_repeats.csv"
done
echo "repeats rc=$?"; cat "$R/bf16_1024x4096_repeats.csv"; pack
timeout 90 normd_kernel_bench --csv --rows 1024 --shared-weights on,off > "$R/rows1024.csv" 2>&1
echo "rows1024 rc=$?"; pack
timeout 260 normd_gpu_tests --gtest_brief=1 > "$R/gpu_tests.log" 2>&1
echo "tests rc=$?"; tail -3 "$R/gpu_tests.log"
pack && rm -rf "$R"
