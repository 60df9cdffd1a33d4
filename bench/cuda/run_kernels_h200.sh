#!/usr/bin/env bash
# The CUDA kernels' work on a GPU machine, logs under $OUT (default ./out), each step bounded:
#   tests      normd_gpu_tests in four shards at once (they are bound by the host's reference)
#   sanitizer  compute-sanitizer memcheck and racecheck over every configuration at a few shapes
#   sweep      normd_kernel_bench sweep: every configuration over the shape grid -> sm_NN.csv
#   batched    one tensor as one segment against segment tables of 16 and 64 (with the table)
#   latency    rows 1 and 8, 20 launches per CUDA graph with programmatic dependent launch
#   compare    compare_kernels.py: the automatic choice against F.rms_norm, torch.compile, Triton
#   before_after  batched with BEFORE_LIB's kernel library and the bundle's, alternated for ROUNDS
#              rounds (default 3; BATCHED_FLAGS are the bench's flags): medians before -> after
#              (batched_before_after.py). Not among the default steps.
# BUNDLE is a folder holding a build's bin/ and lib/ (shared libraries included) with an env.sh
# that puts them on PATH and LD_LIBRARY_PATH;
# TABLE, when set, is a choice table the steps take instead of the one compiled in.
# BEFORE_LIB is a folder holding another build's libnormd_cuda_kernels.so: the bench links the
# library dynamically, so the same bench binary times either build.
#   BUNDLE=.gpu STEPS="tests sweep" SWEEP_S=300 bench/cuda/run_kernels_h200.sh
#   BUNDLE=.gpu BEFORE_LIB=.gpu-before STEPS="tests before_after" bench/cuda/run_kernels_h200.sh
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BUNDLE=$(cd "${BUNDLE:?set BUNDLE to the bundle folder}" && pwd)
OUT=${OUT:-$PWD/out}
STEPS=${STEPS:-"tests sanitizer batched latency compare"}
SWEEP_S=${SWEEP_S:-300}
COMPARE_S=${COMPARE_S:-200}
TABLE=${TABLE:-}
BEFORE_LIB=${BEFORE_LIB:-}
ROUNDS=${ROUNDS:-3}
BATCHED_FLAGS=${BATCHED_FLAGS:-"--hidden 2048,4096,7168,16384 --rows 1024,8192"}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
run_bin() { (source "$BUNDLE/env.sh" && "$@"); }
has() { [[ " $STEPS " == *" $1 "* ]]; }
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }
table_flag=()
[[ -n "$TABLE" ]] && table_flag=(--table-file "$TABLE")
[[ -n "$TABLE" ]] && export NORMD_KERNEL_TABLE_FILE="$TABLE"

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
if has tests; then
  stamp tests
  for shard in 0 1 2 3; do
    (GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$shard run_bin timeout 150 normd_gpu_tests \
       --gtest_print_time=1 > "$OUT/tests$shard.log" 2>&1
     echo "shard $shard rc=$?" >> "$OUT/tests$shard.log") &
  done
  wait
  cat "$OUT"/tests[0-3].log > "$OUT/gpu_tests.log" && rm -f "$OUT"/tests[0-3].log
  grep -E "^\[  (FAILED|PASSED) |rc=" "$OUT/gpu_tests.log"
fi
if has sanitizer; then
  stamp sanitizer
  few='RmsNormCudaConfigs.EveryCandidateAtFewRowsForSanitizers'
  for tool in memcheck racecheck; do
    run_bin timeout 120 compute-sanitizer --tool "$tool" --print-limit 400 --error-exitcode 9 \
      normd_gpu_tests --gtest_brief=1 --gtest_filter="$few" > "$OUT/$tool.log" 2>&1
    echo "$tool rc=$?" >> "$OUT/$tool.log"
    grep -E "SUMMARY|rc=" "$OUT/$tool.log"
  done
fi
if has sweep; then
  stamp sweep
  sm=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
  run_bin timeout $((SWEEP_S + 60)) normd_kernel_bench sweep --budget-s "$SWEEP_S" \
    --table "$OUT/sm_$sm.csv" --measurements "$OUT/measurements.csv" > "$OUT/sweep.log" 2>&1
  echo "sweep rc=$?" >> "$OUT/sweep.log"
  grep -v MISMATCH "$OUT/sweep.log" | tail -14
fi
if has batched; then
  stamp batched
  run_bin timeout 120 normd_kernel_bench batched "${table_flag[@]}" > "$OUT/batched.log" 2>&1
  grep -v "no host copy" "$OUT/batched.log" | tail -30
fi
if has before_after; then
  stamp before_after
  before=$(cd "${BEFORE_LIB:?set BEFORE_LIB for the before_after step}" && pwd)
  for round in $(seq 1 "$ROUNDS"); do
    for side in before after; do
      # shellcheck disable=SC2086  # BATCHED_FLAGS is a list of flags
      (source "$BUNDLE/env.sh"
       [[ $side == before ]] && export LD_LIBRARY_PATH="$before:$LD_LIBRARY_PATH"
       timeout 120 normd_kernel_bench batched "${table_flag[@]}" $BATCHED_FLAGS) \
        > "$OUT/batched-$side-$round.log" 2>&1 || echo "batched $side round $round failed"
    done
  done
  python3 "$here/batched_before_after.py" "$OUT" | tee "$OUT/before_after.txt"
fi
if has latency; then
  stamp latency
  run_bin timeout 30 normd_kernel_bench latency "${table_flag[@]}" | tee "$OUT/latency.log"
fi
if has compare; then
  stamp compare
  timeout $((COMPARE_S + 60)) python3 "$here/compare_kernels.py" \
    --lib "$BUNDLE/lib/libnormd_cuda_kernels.so" "${table_flag[@]}" --budget-s "$COMPARE_S" \
    --csv "$OUT/compare.csv" > "$OUT/compare.log" 2>&1
  grep "^#" "$OUT/compare.log" | tail -14
fi
stamp done
