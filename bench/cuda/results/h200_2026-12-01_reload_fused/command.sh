#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, seventh session): the reload kernel on rows with a residual,
# its weights read per vector (preloading them with x and r spilled), one and two vectors per
# thread, against the automatic choice (register, lean or staged kernel), bf16 and fp32, issue 3's
# rows >= 1024 grid, same run. Logs under $OUT/f.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/f; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/f.tgz" -C /tmp f; }
timeout 60 normd_kernel_bench --csv --dtypes bf16,fp32 --modes fused --rows 1024,4096,16384,65536 > "$R/auto.csv" 2>&1
echo "auto rc=$?"; pack
timeout 200 normd_kernel_bench --csv --dtypes bf16,fp32 --modes fused --rows 1024,4096,16384,65536 --reload on \
  --vectors 1,2 > "$R/reload.csv" 2>&1
echo "reload rc=$?"; pack
