#!/usr/bin/env bash
# Fifth nvidia-h200 call of the nineteenth session (2026-12-03): compute-sanitizer over the final
# library (the bundle of call split_e), the GPU tests that finish in seconds: memcheck with leak
# checking over every kernel family's few-row, misaligned, in-place, NaN, zero-row, batched and PDL
# tests and the sweeps at H 1, 3, 111; racecheck over the NaN, batched, PDL-chain, reload and split
# few-row tests. Line-buffered, so a run cut by its limit keeps what it checked.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/sanitize.tgz" r; }
MEM='RmsNormCuda.*:RmsNormCudaBatched.MixedSegmentsInOneLaunch:RmsNormCudaBatched.PdlChainInGraph'
MEM+=':RmsNormCudaStaged.FallsBackWhereItCannotRun:RmsNormCudaReload.EveryVariantAtFewRows'
MEM+=':RmsNormCudaSplitRow.EverySizeAtFewRows:RmsNormCudaSplitRow.FallsBackWhereItCannotRun'
MEM+=':Hidden/RmsNormSweep.MatchesReference/H1:Hidden/RmsNormSweep.MatchesReference/H3'
MEM+=':Hidden/RmsNormSweep.MatchesReference/H111'
RACE='RmsNormCuda.NanConfinedToItsRow:RmsNormCudaBatched.MixedSegmentsInOneLaunch'
RACE+=':RmsNormCudaBatched.PdlChainInGraph:RmsNormCudaReload.EveryVariantAtFewRows'
RACE+=':RmsNormCudaSplitRow.EverySizeAtFewRows'
timeout 300 stdbuf -oL -eL compute-sanitizer --tool memcheck --leak-check full --error-exitcode 9 \
  normd_gpu_tests --gtest_filter="$MEM" > "$R/memcheck.log" 2>&1
echo "memcheck rc=$?"; grep -a '^\[  PASSED\|^\[  FAILED\|SUMMARY' "$R/memcheck.log"; pack
timeout 180 stdbuf -oL -eL compute-sanitizer --tool racecheck --error-exitcode 9 \
  normd_gpu_tests --gtest_filter="$RACE" > "$R/racecheck.log" 2>&1
echo "racecheck rc=$?"; grep -a '^\[  PASSED\|^\[  FAILED\|SUMMARY' "$R/racecheck.log"
pack && rm -rf "$R"
