#!/usr/bin/env bash
# One GPU session's worth of kernel work on the H200 machine, logs under $OUT (default ./out):
#   tests      normd_gpu_tests (all)                                  -> gpu_tests.log
#   sweep      normd_kernel_bench --sweep on a few shapes (shape tuning) -> sweep.log
#   bench      normd_kernel_bench over issue 3's grid, CSV            -> bench.csv
#   compare    compare_kernels.py (PyTorch, torch.compile, Triton)    -> compare.log, compare.csv
#   times      kernel_times.py at TIMES_SHAPES: do_bench beside each call's kernel time -> kernel_times.txt
#   shapes     shape_sweep.py at SHAPES_SHAPES with SHAPES_VARIANTS: our variants under do_bench beside
#              the anchors, 3 interleaved rounds (how v10 chose the mapping)  -> shape_sweep.txt
#   staging    normd_staging_bench: packing pinned staging three ways, then upload or zero copy -> staging.log
#   sanitizer  compute-sanitizer memcheck + racecheck on a reduced test filter -> sanitizer.log
#   probe      torch.compile's generated kernels at PROBE_SHAPES, and ncu counters of them and of
#              ours at the same shapes                                -> inductor_code.log, ncu_*.txt
# Usage (from the repository root, after bundling into .gpu/ as docs/KERNELS.md, "Build and run", says):
#   STEPS="tests bench compare" bench/cuda/run_h200.sh
set -uo pipefail
bench_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$bench_dir/../.." && pwd)
source "$root/.gpu/env.sh"
OUT=${OUT:-$root/out}
mkdir -p "$OUT"
STEPS=${STEPS:-"tests sweep bench compare sanitizer"}
COMPARE_ARGS=${COMPARE_ARGS:-}
BENCH_ARGS=${BENCH_ARGS:-}
export PYTHONUNBUFFERED=1

has() { [[ " $STEPS " == *" $1 "* ]]; }
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }

stamp "start"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
if has tests; then
  stamp tests
  timeout 300 normd_gpu_tests --gtest_brief=1 2>&1 | tee "$OUT/gpu_tests.log" | tail -25
fi
if has sweep; then
  stamp sweep
  timeout 150 normd_kernel_bench --sweep ${SWEEP_ARGS:---dtypes bf16,fp32 --rows 1,1024,16384,65536 \
    --hidden 1024,3000,4096,7168,8192,16384 --modes plain,fused} 2>&1 | tee "$OUT/sweep.log" | tail -5
fi
if has bench; then
  stamp bench
  timeout 240 normd_kernel_bench --csv $BENCH_ARGS 2>&1 | tee "$OUT/bench.csv" | tail -5
fi
if has compare; then
  stamp compare
  timeout 330 python3 "$bench_dir/compare_kernels.py" --lib "$root/.gpu/lib/libnormd_cuda_kernels.so" \
    --csv "$OUT/compare.csv" $COMPARE_ARGS 2>&1 | tee "$OUT/compare.log" | tail -40
  if [[ -n "${COMPARE_ARGS2:-}" ]]; then
    timeout 200 python3 "$bench_dir/compare_kernels.py" --lib "$root/.gpu/lib/libnormd_cuda_kernels.so" \
      --csv "$OUT/compare2.csv" $COMPARE_ARGS2 2>&1 | tee "$OUT/compare2.log" | tail -40
  fi
fi
if has times; then
  # dtype:mode:ROWSxH; the 1024-row points are where do_bench and kernel time differ most.
  TIMES_SHAPES=${TIMES_SHAPES:-bf16:plain:1024x1024,bf16:plain:1024x4096,fp32:plain:4096x1024,bf16:plain:65536x4096}
  stamp times
  timeout 200 python3 "$bench_dir/kernel_times.py" --lib "$root/.gpu/lib/libnormd_cuda_kernels.so" \
    --shapes "$TIMES_SHAPES" 2>&1 | tee "$OUT/kernel_times.txt" | tail -20
fi
if has shapes; then
  SHAPES_SHAPES=${SHAPES_SHAPES:-bf16:plain:1024x4096,fp32:plain:4096x1024,bf16:fused:16384x4096}
  SHAPES_VARIANTS=${SHAPES_VARIANTS:-auto,reload=on+n=1,reload=on+n=2,reload=on+n=4,reload=off,lean=on}
  stamp shapes
  timeout 300 python3 "$bench_dir/shape_sweep.py" --lib "$root/.gpu/lib/libnormd_cuda_kernels.so" \
    --shapes "$SHAPES_SHAPES" --variants "$SHAPES_VARIANTS" --rounds 3 2>&1 | tee "$OUT/shape_sweep.txt" | tail -20
fi
if has staging; then
  stamp staging
  timeout 120 normd_staging_bench ${STAGING_ARGS:-} 2>&1 | tee "$OUT/staging.log" | tail -8
fi
if has sanitizer; then
  stamp sanitizer
  filter='RmsNormCuda.NanConfinedToItsRow:RmsNormCudaBatched.MixedSegmentsInOneLaunch:RmsNormCuda.MisalignedPointers'
  filter+=':RmsNormCudaStaged.InPlace:RmsNormCudaReload.EveryVariantAtFewRows:RmsNormCudaWarpRow.EveryVariantAtFewRows'
  {
    timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 normd_gpu_tests --gtest_brief=1 \
      --gtest_filter="$filter"; echo "memcheck rc=$?"
    timeout 100 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests --gtest_brief=1 \
      --gtest_filter='RmsNormCuda.NanConfinedToItsRow:RmsNormCudaBatched.MixedSegmentsInOneLaunch:RmsNormCudaStaged.InPlace:RmsNormCudaReload.EveryVariantAtFewRows:RmsNormCudaWarpRow.EveryVariantAtFewRows'
    echo "racecheck rc=$?"
  } 2>&1 | tee "$OUT/sanitizer.log" | tail -12
fi
if has probe; then
  # dtype:mode:ROWSxH; ours and torch.compile's kernels at each, one profiled launch each.
  PROBE_SHAPES=${PROBE_SHAPES:-bf16:plain:1024x4096,bf16:plain:65536x8192,bf16:fused:65536x4096,bf16:plain:16384x7168}
  stamp "probe: inductor code"
  TORCH_LOGS=output_code timeout 240 python3 "$bench_dir/inductor_probe.py" --shapes "$PROBE_SHAPES" --calls 3 \
    > "$OUT/inductor_code.log" 2>&1; echo "inductor probe rc=$?"
  sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy
            --section SchedulerStats --section WarpStateStats)
  for spec in ${PROBE_SHAPES//,/ }; do
    IFS=: read -r dt mode dims <<< "$spec"
    tag="${dt}_${mode}_${dims}"
    stamp "probe: ncu $tag"
    timeout 150 ncu --clock-control none --kernel-name regex:triton --launch-skip 2 --launch-count 1 \
      "${sections[@]}" python3 "$bench_dir/inductor_probe.py" --shapes "$spec" --calls 4 \
      > "$OUT/ncu_compile_$tag.txt" 2>&1; echo "ncu compile $tag rc=$?"
    timeout 150 ncu --clock-control none --kernel-name regex:RmsNorm --launch-skip 30 --launch-count 1 \
      "${sections[@]}" normd_kernel_bench --dtypes "$dt" --modes "$mode" --rows "${dims%x*}" --hidden "${dims#*x}" \
      > "$OUT/ncu_ours_$tag.txt" 2>&1; echo "ncu ours $tag rc=$?"
  done
fi
stamp done
