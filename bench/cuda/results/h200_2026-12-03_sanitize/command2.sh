#!/usr/bin/env bash
# Sixth nvidia-h200 call of the nineteenth session (2026-12-03), after command.sh's run finished in
# 33 s with run times close to the tests' own: memcheck with leak checking over every GPU test but
# command.sh's and the four longest forced-kernel sweeps (staged, lean, reload, cluster
# MatchesReference: 265 s of split_e's 401), so including the split-row sweep and the H sweeps up
# to 65536; racecheck over the staged in-place and stage-count tests, in place and the split and
# staged fallbacks. Output in r2/.
source .gpu/env.sh
R=$OUT/r2; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/sanitize2.tgz" r2; }
MEM='-RmsNormCuda.*:RmsNormCudaBatched.MixedSegmentsInOneLaunch:RmsNormCudaBatched.PdlChainInGraph'
MEM+=':RmsNormCudaStaged.FallsBackWhereItCannotRun:RmsNormCudaReload.EveryVariantAtFewRows'
MEM+=':RmsNormCudaSplitRow.EverySizeAtFewRows:RmsNormCudaSplitRow.FallsBackWhereItCannotRun'
MEM+=':Hidden/RmsNormSweep.MatchesReference/H1:Hidden/RmsNormSweep.MatchesReference/H3'
MEM+=':Hidden/RmsNormSweep.MatchesReference/H111:RmsNormCudaArguments.*'
MEM+=':RmsNormCudaStaged.MatchesReference:RmsNormCudaLean.MatchesReference'
MEM+=':RmsNormCudaReload.MatchesReference:RmsNormCudaCluster.MatchesReference'
RACE='RmsNormCudaStaged.InPlace:RmsNormCudaStaged.EveryStageCount:RmsNormCuda.InPlace'
RACE+=':RmsNormCudaSplitRow.FallsBackWhereItCannotRun:RmsNormCudaStaged.FallsBackWhereItCannotRun'
timeout 330 stdbuf -oL -eL compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
  normd_gpu_tests --gtest_filter="$MEM" > "$R/memcheck.log" 2>&1
echo "memcheck rc=$?"; grep -a '^\[  PASSED\|^\[  FAILED\|SUMMARY' "$R/memcheck.log"; pack
timeout 100 stdbuf -oL -eL compute-sanitizer --tool racecheck --error-exitcode 9 \
  normd_gpu_tests --gtest_filter="$RACE" > "$R/racecheck.log" 2>&1
echo "racecheck rc=$?"; grep -a '^\[  PASSED\|^\[  FAILED\|SUMMARY' "$R/racecheck.log"
pack && rm -rf "$R"
