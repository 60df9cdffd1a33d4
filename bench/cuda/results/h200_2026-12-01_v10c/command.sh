#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, ninth session), v10c: the integration suite against
# normd --backend=cuda with v10's kernel library (3249468; .gpu holds normd, normd_integration_test
# and their libraries). Logs under $OUT/v10c.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/v10c; rm -rf "$R"; mkdir -p "$R"
OUT=$R/integration STEPS=integration timeout 200 tests/gpu/run_server_h200.sh > "$R/integration.log" 2>&1
echo "integration rc=$?"; tail -3 "$R/integration.log"
tar czf "$OUT/v10c.tgz" -C /tmp v10c
