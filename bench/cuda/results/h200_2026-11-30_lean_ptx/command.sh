#!/usr/bin/env bash
# One nvidia-h200 call (2026-11-30): torch.compile's generated kernels as PTX (Triton's cache), and ncu
# counters of the lean two-pass kernel beside those of Inductor's kernel at bf16 fused 65536 x 4096
# and plain 16384 x 7168. Run from the repository root with .gpu carried.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
export TRITON_CACHE_DIR=/tmp/triton_cache
python3 bench/cuda/inductor_probe.py --shapes bf16:fused:65536x4096,bf16:plain:16384x7168,bf16:plain:65536x8192,bf16:plain:1024x4096 --calls 2 > "$R/probe.log" 2>&1
echo "probe rc=$?"
find /tmp/triton_cache -name "*.ptx" | while read -r f; do cp "$f" "$R/$(basename "$(dirname "$f")")_$(basename "$f")"; done
ls "$R" | head -20
sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy
          --section SchedulerStats --section WarpStateStats --section SourceCounters)
for spec in fused:65536:4096 plain:16384:7168; do
  IFS=: read -r mode rows h <<< "$spec"
  timeout 120 ncu --clock-control none --kernel-name-base demangled --kernel-name "regex:TwoPass.*true" \
    --launch-skip 10 --launch-count 1 "${sections[@]}" \
    normd_kernel_bench --lean --dtypes bf16 --modes "$mode" --rows "$rows" --hidden "$h" > "$R/ncu_lean_${mode}_${rows}x${h}.txt" 2>&1
  echo "ncu lean $spec rc=$?"
  timeout 120 ncu --clock-control none --kernel-name regex:triton --launch-skip 1 --launch-count 1 "${sections[@]}" \
    python3 bench/cuda/inductor_probe.py --shapes "bf16:$mode:${rows}x$h" --calls 3 > "$R/ncu_compile_${mode}_${rows}x${h}.txt" 2>&1
  echo "ncu compile $spec rc=$?"
done
tar -C "$OUT" -czf "$OUT/ptx.tgz" r && rm -rf "$R"
