#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, eighth session), v9c: (1) the integration suite against
# normd --backend=cuda with the v9 kernel library; (2) the reload kernel's vector count for plain
# 16-bit rows of H 1024-8192: one, two and four per thread, same run. Logs under $OUT/v9c.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/v9c; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/v9c.tgz" -C /tmp v9c; }
OUT=$R/integration STEPS=integration timeout 240 tests/gpu/run_server_h200.sh > "$R/integration.log" 2>&1
echo "integration rc=$?"; tail -3 "$R/integration.log"; pack
timeout 120 normd_kernel_bench --csv --dtypes bf16,fp16 --modes plain --hidden 1024,3000,4096,5120,7168,8192 \
  --rows 1024,4096,16384,65536 --reload on --vectors 1,2,4 > "$R/vectors.csv" 2>&1
echo "vectors rc=$?"; pack
