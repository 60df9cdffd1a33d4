#!/usr/bin/env bash
# The GPU suite and compute-sanitizer over it, on the GPU machine; logs under $OUT.
#   gpu_tests.log      normd_gpu_tests, every test (real kernels on the H200)
#   memcheck.log       compute-sanitizer --tool memcheck over the GPU suite (memcheck64.log: the 14 GiB test)
#   racecheck.log      compute-sanitizer --tool racecheck over the kernel tests (shared-memory races)
# Usage (repository root, after bundling the binaries into .gpu): tests/gpu/run_sanitizers_h200.sh
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/.gpu/env.sh"
OUT=${OUT:-$root/out}
mkdir -p "$OUT"
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
stamp start; nvidia-smi --query-gpu=name,driver_version --format=csv
stamp gpu tests
timeout 300 normd_gpu_tests --gtest_brief=1 > "$OUT/gpu_tests.log" 2>&1; echo "gpu tests exit $?" | tee -a "$OUT/gpu_tests.log"
tail -3 "$OUT/gpu_tests.log"
# The 2^31-element test (14 GiB) runs apart, so that its slowness under memcheck cannot starve the rest.
stamp memcheck "$sanitizer"
timeout ${MEMCHECK_TIMEOUT:-300} "$sanitizer" --tool memcheck --leak-check full --error-exitcode 99 \
  normd_gpu_tests --gtest_brief=1 --gtest_filter='-RmsNormCudaBatched.SixtyFourBitIndexing' > "$OUT/memcheck.log" 2>&1
echo "memcheck exit $?" | tee -a "$OUT/memcheck.log"; tail -4 "$OUT/memcheck.log"
stamp memcheck 64-bit indexing
timeout ${MEMCHECK64_TIMEOUT:-150} "$sanitizer" --tool memcheck --error-exitcode 99 \
  normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaBatched.SixtyFourBitIndexing' > "$OUT/memcheck64.log" 2>&1
echo "memcheck 64-bit exit $?" | tee -a "$OUT/memcheck64.log"; tail -4 "$OUT/memcheck64.log"
stamp racecheck
timeout ${RACECHECK_TIMEOUT:-100} "$sanitizer" --tool racecheck --error-exitcode 99 \
  normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCuda.*:RmsNormCudaBatched.MixedSegmentsInOneLaunch' > "$OUT/racecheck.log" 2>&1
echo "racecheck exit $?" | tee -a "$OUT/racecheck.log"; tail -4 "$OUT/racecheck.log"
stamp end
