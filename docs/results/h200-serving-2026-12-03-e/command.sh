#!/usr/bin/env bash
# Fifth nvidia-h200 call of the seventeenth session (2026-12-03). Logs under $OUT/e.tgz.
# .gpu: 6686686's build (the upload turns reverted; the server's code as 436dd44), with the integration
# suite whose LargeRequestsSharingLaunchesAreEachCorrect now runs with one and two CUDA workers.
#  1. The batching tests of the integration suite against normd --backend=cuda (the rest of the suite
#     passed in call b and, on this server code's predecessor, in call z).
#  2. tests/gpu/run_grid_h200.sh in its quick mode (GRID_QUICK=1): a check of the new one-command grid
#     script, with short windows and no 32 MiB c=256 points; its figures are not the grid's.
set -uo pipefail
source .gpu/env.sh
R=/tmp/e; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/e.tgz" -C /tmp e; }
NORMD_BINARY=$(command -v normd) NORMD_TEST_BACKEND=cuda timeout 120 normd_integration_test \
  --gtest_filter='BatchingTest.*' > "$R/integration_batching.log" 2>&1
echo "integration (batching) rc=$?"; pack
OUT=$R/grid GRID_QUICK=1 timeout 330 tests/gpu/run_grid_h200.sh > "$R/grid.log" 2>&1
echo "grid rc=$?"; pack
grep -E "large requests shared|FAILED|PASSED|OK \]" "$R/integration_batching.log" | head -12
cat "$R/grid.log"; ls "$R/grid"
