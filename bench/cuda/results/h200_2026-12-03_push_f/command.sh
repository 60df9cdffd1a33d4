#!/usr/bin/env bash
# Built from commit 3f2759b. Sixth nvidia-h200 call of the twentieth session (2026-12-03): the
# issue's small-batch target shapes on the final library, three rounds with the push off beside
# them; then racecheck over the lean two-pass kernel's sweep (not run under racecheck before), cut
# at 230 s.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/push_f.tgz" r; }
for round in 1 2 3; do
  timeout 20 normd_kernel_bench --csv --dtypes bf16 --rows 1,8 --hidden 4096,7168 --modes plain,fused \
    --push auto,off > "$R/targets$round.csv" 2>&1
  echo "targets $round rc=$?"
done
pack
timeout 230 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests \
  --gtest_filter='RmsNormCudaLean.MatchesReference' > "$R/racecheck_lean.log" 2>&1
echo "racecheck rc=$?"; grep -a 'RACECHECK SUMMARY\|PASSED\|FAILED' "$R/racecheck_lean.log"
pack && rm -rf "$R"
