#!/usr/bin/env bash
# Quick start, command 2: installs what is missing, builds every target once (the `ci` preset:
# Release, CUDA code for the default architectures 90a;100;80;89 when nvcc is found) and runs every
# test with CTest.
# Tests that need a GPU skip, saying why, on a machine without one.
#
# Then the libFuzzer targets run for NORMD_FUZZ_SECONDS each (default 30; CI: 60).
#
# NORMD_CI_SANITIZERS=1 (set by .ci/run) also builds the CPU-only `asan` preset (AddressSanitizer +
# UBSan) and runs the unit and integration tests under it: about 5 min of build and 2.5 min of tests
# on two cores (docs/RELIABILITY.md has the figures). NORMD_CI_TSAN=1 (also set by .ci/run) adds the
# `tsan` preset (ThreadSanitizer) over the unit, integration and client tests: the scheduler, workers,
# batcher and thread pool under concurrency (base/mutex.h makes Abseil's locks visible to TSan), and
# the real normd under the suites' concurrent clients. Debian's gRPC is not built with TSan: its libc
# calls are ignored and its hand-offs are stated by normd's reactors or suppressed in tests/tsan.supp,
# which says why for each entry (docs/RELIABILITY.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
jobs=$(nproc)
cmake --preset ci
cmake --build --preset ci -j "$jobs"
ctest --preset ci -j "$jobs"

# The fuzz targets (clang, ASan + UBSan, libFuzzer) for a bounded time each from the committed seed
# corpus; a crash fails the run. NORMD_FUZZ_SECONDS=0 skips them.
fuzz_seconds=${NORMD_FUZZ_SECONDS:-30}
if [[ "$fuzz_seconds" != 0 ]]; then
  start=$SECONDS
  cmake --preset fuzz
  # The three targets run_fuzzers.sh runs (not normd, normctl or the seed-corpus generator).
  cmake --build --preset fuzz -j "$jobs" --target fuzz_normalize_request fuzz_staging_packer \
    fuzz_dtype_conversions
  echo "test.sh: fuzz build took $((SECONDS - start)) s"
  bash tests/fuzz/run_fuzzers.sh build/fuzz "$fuzz_seconds"
fi

if [[ "${NORMD_CI_SANITIZERS:-0}" == 1 ]]; then
  # halt_on_error: the first report fails the test that caused it. detect_leaks stays on for ASan.
  export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:abort_on_error=1"
  # Leaks inside OpenSSL that gRPC's TLS stack holds at exit; the file says why (no normd frame).
  export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
  # ignore_noninstrumented_modules: libc calls made by Debian's uninstrumented gRPC and Abseil are not
  # judged (their synchronisation is invisible); history_size=7 (the most) keeps enough of each
  # thread's past accesses that both stacks of a report are restored, which tests/tsan.supp needs.
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:history_size=7:suppressions=$PWD/tests/tsan.supp"
  presets=(asan)
  [[ "${NORMD_CI_TSAN:-0}" == 1 ]] && presets+=(tsan)
  for preset in "${presets[@]}"; do
    start=$SECONDS
    cmake --preset "$preset"
    # What the unit, integration and client tests run (not the benchmarks or the deploy load tool).
    cmake --build --preset "$preset" -j "$jobs" --target normd_server_unit_test normd_kernels_test \
      normd_integration_test normd_client_test normd normd-echo normbench normctl
    echo "test.sh: $preset build took $((SECONDS - start)) s"
    ctest --preset "$preset" -j "$jobs" -L 'unit|integration|client' -LE 'deploy|gpu'
  done
fi
