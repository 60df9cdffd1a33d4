#!/usr/bin/env bash
# Fifth nvidia-h200 call of the seventeenth session (2026-12-03). Logs under $OUT/e.tgz.
# .gpu: 6686686's build (the upload turns reverted; the server's code as 436dd44).
#  1. tests/gpu/run_grid_h200.sh in its quick mode (GRID_QUICK=1): a check of the new one-command grid
#     script, with a few points in short windows; its figures are not the grid's.
set -uo pipefail
source .gpu/env.sh
R=/tmp/e; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/e.tgz" -C /tmp e; }
OUT=$R/grid GRID_QUICK=1 timeout 200 tests/gpu/run_grid_h200.sh > "$R/grid.log" 2>&1
echo "grid rc=$?"; pack
cat "$R/grid.log"; ls "$R/grid"
