#!/usr/bin/env bash
# One nvidia-h200 call (2026-11-30): the lean two-pass kernel with Triton's L2 cache hints and a
# two-vector first pass: its tests, the bench against the automatic choice, ncu counters.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
timeout 200 normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaLean.*' > "$R/lean_tests.log" 2>&1
echo "tests rc=$?"; tail -3 "$R/lean_tests.log"
timeout 200 normd_kernel_bench --csv --lean --dtypes bf16,fp16,fp32 --rows 1024,4096,16384,65536 > "$R/lean_ab.csv" 2>&1
echo "bench rc=$?"
sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy
          --section SchedulerStats --section WarpStateStats)
for spec in fused:65536:4096 plain:16384:7168 plain:65536:4096; do
  IFS=: read -r mode rows h <<< "$spec"
  timeout 120 ncu --clock-control none --kernel-name-base demangled --kernel-name 'regex:TwoPass.*\(bool\)1' \
    --launch-skip 10 --launch-count 1 "${sections[@]}" \
    normd_kernel_bench --lean --dtypes bf16 --modes "$mode" --rows "$rows" --hidden "$h" > "$R/ncu_lean_${mode}_${rows}x${h}.txt" 2>&1
  echo "ncu lean $spec rc=$?"
done
tar -C "$OUT" -czf "$OUT/lean_l2.tgz" r && rm -rf "$R"
