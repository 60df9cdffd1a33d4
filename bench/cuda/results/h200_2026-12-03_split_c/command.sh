#!/usr/bin/env bash
# Third nvidia-h200 call of 2026-12-03 (eighteenth session; two machine starts failed before it, so
# it carries what was to be two calls): the split-row kernel's automatic rule from call split_b
# (C = 8/4/2 CTAs per row up to 4/8/16 rows of 10-128 KB, 256 threads), and an A/B of its row loads:
# the threads' vector loads against one bulk copy (cp.async.bulk) of x and of r into shared memory.
# In order, each step packed as it ends (a call cut short keeps what ran):
#   the split tests (bulk loads included) and the host-side rules;
#   graph-replayed launches of 1, 8, 16 rows, the split never / automatic / automatic with bulk
#   loads, in one run, twice;
#   the integration suite against normd --backend=cuda (its one-request launches take the split);
#   the comparison against F.rms_norm, torch.compile and the Triton kernel at rows 1 and 8;
#   compute-sanitizer over the few-row split test; the rest of normd_gpu_tests.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/split_c.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 90 normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaSplitRow.*:RmsNormCudaArguments.*' \
  > "$R/gpu_tests_split.log" 2>&1
echo "split tests rc=$?"; tail -2 "$R/gpu_tests_split.log"; pack
common=(--csv --dtypes bf16,fp16,fp32 --rows 1,8,16 --hidden 1024,3000,4096,5120,7168,8192,16384
        --modes plain,fused)
for round in 1 2; do
  timeout 40 normd_kernel_bench "${common[@]}" --split 1 > "$R/never$round.csv" 2>&1
  echo "bench never $round rc=$?"
  timeout 60 normd_kernel_bench "${common[@]}" --split 0 --split-bulk off,on > "$R/auto$round.csv" 2>&1
  echo "bench auto $round rc=$?"; pack
done
OUT=$R/integration STEPS=integration timeout 150 tests/gpu/run_server_h200.sh > "$R/integration.log" 2>&1
echo "integration rc=$?"; grep -a 'PASSED\|FAILED' "$R/integration.log" | tail -3; pack
timeout 130 python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so --rows 1,8 \
  --budget-s 110 --csv "$R/compare.csv" > "$R/compare.log" 2>&1
echo "compare rc=$?"; tail -2 "$R/compare.log"; pack
{
  timeout 60 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 normd_gpu_tests \
    --gtest_brief=1 --gtest_filter='RmsNormCudaSplitRow.EverySizeAtFewRows'; echo "memcheck rc=$?"
  timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests \
    --gtest_brief=1 --gtest_filter='RmsNormCudaSplitRow.EverySizeAtFewRows'; echo "racecheck rc=$?"
} > "$R/sanitizer.log" 2>&1
grep 'rc=\|ERROR SUMMARY\|RACECHECK SUMMARY' "$R/sanitizer.log"; pack
timeout 170 normd_gpu_tests --gtest_brief=1 --gtest_filter='-RmsNormCudaSplitRow.*:RmsNormCudaArguments.*' \
  > "$R/gpu_tests_rest.log" 2>&1
echo "other tests rc=$?"; tail -3 "$R/gpu_tests_rest.log"
pack && rm -rf "$R"
