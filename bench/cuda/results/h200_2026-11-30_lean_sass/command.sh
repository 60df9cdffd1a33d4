#!/usr/bin/env bash
# One nvidia-h200 call (2026-11-30): why the lean two-pass kernel is issue-bound. SASS of the lean
# bf16 kernel, executed-instruction counts (ncu) of it and of Inductor's kernel at bf16 plain
# 16384 x 7168, and the bench of the version that computes the scale once per block.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
cuobjdump -sass -fun '_ZN5normd4cuda8internal20RmsNormTwoPassKernelI13__nv_bfloat16Lb1EEEvNS1_12KernelParamsE' \
  .gpu/lib/libnormd_cuda_kernels.so > "$R/lean_bf16.sass" 2>&1; echo "sass rc=$? $(wc -l < "$R/lean_bf16.sass") lines"
metrics=smsp__inst_executed.sum,smsp__sass_inst_executed_op_global_ld.sum,smsp__sass_inst_executed_op_global_st.sum,gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active
timeout 120 ncu --clock-control none --kernel-name-base demangled --kernel-name 'regex:TwoPass.*\(bool\)1' \
  --launch-skip 10 --launch-count 1 --metrics "$metrics" --section SourceCounters \
  normd_kernel_bench --lean --dtypes bf16 --modes plain --rows 16384 --hidden 7168 > "$R/ncu_lean.txt" 2>&1; echo "ncu lean rc=$?"
timeout 120 ncu --clock-control none --kernel-name-base demangled --kernel-name 'regex:RmsNormRowKernel' \
  --launch-skip 10 --launch-count 1 --metrics "$metrics" \
  normd_kernel_bench --dtypes bf16 --modes plain --rows 16384 --hidden 7168 > "$R/ncu_row.txt" 2>&1; echo "ncu row rc=$?"
timeout 120 ncu --clock-control none --kernel-name regex:triton --launch-skip 1 --launch-count 1 --metrics "$metrics" \
  python3 bench/cuda/inductor_probe.py --shapes bf16:plain:16384x7168 --calls 3 > "$R/ncu_compile.txt" 2>&1; echo "ncu compile rc=$?"
timeout 100 normd_kernel_bench --csv --lean --dtypes bf16,fp32 --rows 1024,16384,65536 --hidden 1024,4096,7168,8192,16384 > "$R/lean_ab.csv" 2>&1
echo "bench rc=$?"
tar -C "$OUT" -czf "$OUT/sass.tgz" r && rm -rf "$R"
