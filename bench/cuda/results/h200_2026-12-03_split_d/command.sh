#!/usr/bin/env bash
# Fourth nvidia-h200 call of 2026-12-03 (eighteenth session), the final library of the session: the
# split-row kernel under its automatic rule, the bulk-load variant of call split_c taken out again.
# Every normd_gpu_tests test (line-buffered, so that a cut leaves what ran); the small-batch
# target shapes (bf16, rows 1 and 8, H 4096 and 7168, plain and fused; 20 launches from one CUDA
# graph, L2-resident) with the split never and automatic, three rounds; then the integration suite
# against normd --backend=cuda.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/split_d.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 330 stdbuf -oL -eL normd_gpu_tests --gtest_brief=1 > "$R/gpu_tests.log" 2>&1
echo "tests rc=$?"; tail -3 "$R/gpu_tests.log"; pack
for round in 1 2 3; do
  timeout 20 normd_kernel_bench --csv --dtypes bf16 --rows 1,8 --hidden 4096,7168 --modes plain,fused \
    --split 1,0 > "$R/targets$round.csv" 2>&1
  echo "targets $round rc=$?"
done
pack
OUT=$R/integration STEPS=integration timeout 100 tests/gpu/run_server_h200.sh > "$R/integration.log" 2>&1
echo "integration rc=$?"; grep -a 'PASSED\|FAILED' "$R/integration.log" | tail -3
pack && rm -rf "$R"
