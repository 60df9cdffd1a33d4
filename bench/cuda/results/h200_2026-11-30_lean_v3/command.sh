#!/usr/bin/env bash
# One nvidia-h200 call (2026-11-30): the lean two-pass kernel with residual and weight kind known at
# compile time: its tests, the bench against the automatic choice, instruction counts (ncu).
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
timeout 200 normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaLean.*' > "$R/lean_tests.log" 2>&1
echo "tests rc=$?"; tail -2 "$R/lean_tests.log"
timeout 200 normd_kernel_bench --csv --lean --dtypes bf16,fp16,fp32 --rows 1024,4096,16384,65536 > "$R/lean_ab.csv" 2>&1
echo "bench rc=$?"
metrics=smsp__inst_executed.sum,gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed
for spec in plain:16384:7168 plain:65536:4096; do
  IFS=: read -r mode rows h <<< "$spec"
  timeout 120 ncu --clock-control none --kernel-name-base demangled --kernel-name 'regex:TwoPass.*\(bool\)1' \
    --launch-skip 10 --launch-count 1 --metrics "$metrics" \
    normd_kernel_bench --lean --dtypes bf16 --modes "$mode" --rows "$rows" --hidden "$h" > "$R/ncu_lean_${mode}_${rows}x${h}.txt" 2>&1
  echo "ncu lean $spec rc=$?"; grep -E "inst_executed|time_duration|issue_active|dram__" "$R/ncu_lean_${mode}_${rows}x${h}.txt"
done
tar -C "$OUT" -czf "$OUT/v3.tgz" r && rm -rf "$R"
