#!/usr/bin/env bash
# Issue 8's grid with the streaming-store packing (cd9232c), 2026-11-30 ~03:45 UTC, one nvidia-h200 call.
# The bundle's normd was built before --malloc-arenas got its per-core default, so the serve step passes
# --malloc-arenas=4, which is what the default gives on this 16-core machine; the c1 step runs normd with
# its built-in 2 (one request at a time: no allocator contention). --max-queue-bytes=4 GiB lets 64
# clients of 32 MiB requests all be in flight (the 1 GiB default refuses part of them, by design).
set -uo pipefail
R=/tmp/rf; rm -rf "$R"; mkdir -p "$R"
OUT=$R STEPS="serve c1" DURATION=3s SERVE_FLAGS="--malloc-arenas=4 --max-queue-bytes=4294967296" \
  SERVE_SHAPES="1:1,8,64,256 64:1,8,64,256 4096:1,8,64" C1_VARIANTS="cuda cuda_poll" \
  timeout 560 tests/gpu/run_server_h200.sh > "$R/run.log" 2>&1
tar czf "$OUT/rf.tgz" -C /tmp rf
grep -E "^== |throughput target|per launch|server time" "$R/run.log"

# Last call, 04:17 UTC, with the session's final normd (per-core arena default, malloc_arenas in the
# start-up line) and integration test binary (97 tests, including LifecycleTest.MallocArenas...):
#   source .gpu/env.sh; NORMD_BINARY=$(command -v normd) NORMD_TEST_BACKEND=cuda \
#     normd_integration_test --gtest_brief=1     -> integration_cuda_final.log (tail)
