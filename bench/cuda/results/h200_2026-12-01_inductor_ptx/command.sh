#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, seventh session): what torch.compile's kernels are, exactly, at
# 16-bit plain shapes where they beat ours: Inductor's generated source (TORCH_LOGS=output_code) and
# Triton's PTX for them (from its cache), and ncu of our register and reload kernels at bf16 plain
# 65536 x 8192 with the sections of the earlier ncu of torch.compile's kernel
# (h200_2026-11-30_pdl_probe/ncu_compile_bf16_plain_65536x8192.txt). Logs under $OUT/p.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/p; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/p.tgz" -C /tmp p; }
export TRITON_CACHE_DIR=$R/triton_cache
TORCH_LOGS=output_code timeout 200 python3 bench/cuda/inductor_probe.py --calls 3 \
  --shapes bf16:plain:65536x8192,bf16:plain:65536x16384,bf16:plain:16384x7168,bf16:plain:1024x4096,bf16:fused:65536x16384 \
  > "$R/inductor_code.log" 2>&1
echo "probe rc=$?"
find "$R/triton_cache" -name '*.ptx' | head; pack
sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy
          --section SchedulerStats --section WarpStateStats)
timeout 100 ncu --clock-control none --kernel-name regex:RmsNorm --launch-skip 30 --launch-count 1 "${sections[@]}" \
  normd_kernel_bench --dtypes bf16 --modes plain --rows 65536 --hidden 8192 > "$R/ncu_ours_register.txt" 2>&1
echo "ncu register rc=$?"; pack
timeout 100 ncu --clock-control none --kernel-name regex:RmsNorm --launch-skip 30 --launch-count 1 "${sections[@]}" \
  normd_kernel_bench --dtypes bf16 --modes plain --rows 65536 --hidden 8192 --reload on > "$R/ncu_ours_reload.txt" 2>&1
echo "ncu reload rc=$?"; pack
rm -rf "$R/triton_cache/"*/*.cubin 2>/dev/null; pack
