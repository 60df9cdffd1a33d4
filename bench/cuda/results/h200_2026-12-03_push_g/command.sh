#!/usr/bin/env bash
# Built from commit 3f2759b. Seventh nvidia-h200 call of the twentieth session (2026-12-03):
# racecheck over the reload kernel's sweep (not run under racecheck before), cut at 240 s.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
timeout 240 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests \
  --gtest_filter='RmsNormCudaReload.MatchesReference' > "$R/racecheck_reload.log" 2>&1
echo "racecheck rc=$?"; grep -a 'RACECHECK SUMMARY\|PASSED\|FAILED' "$R/racecheck_reload.log"
tar -C "$OUT" -czf "$OUT/push_g.tgz" r && rm -rf "$R"
