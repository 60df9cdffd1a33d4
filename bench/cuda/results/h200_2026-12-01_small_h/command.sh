#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, eighth session): the thread mappings at the points where our
# kernel's own device time trails Triton's or Inductor's (call kernel_times): fp32 plain H 1024,
# 4096, 5120 and bf16 plain H 1024 at 1024-16384 rows; the automatic choice, the register kernel
# with one, two, four vectors per thread, and the reload kernel with its default and one, two,
# four, same run. Logs under $OUT/sh.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/sh; rm -rf "$R"; mkdir -p "$R"
timeout 60 normd_kernel_bench --csv --dtypes fp32 --modes plain --hidden 1024,4096,5120 \
  --rows 1024,4096,16384 --reload auto,on --vectors 0,1,2,4 > "$R/fp32.csv" 2>&1
echo "fp32 rc=$?"
timeout 30 normd_kernel_bench --csv --dtypes bf16 --modes plain --hidden 1024 \
  --rows 1024,4096,16384 --reload auto,on --vectors 0,1,2,4 > "$R/bf16.csv" 2>&1
echo "bf16 rc=$?"
tar czf "$OUT/sh.tgz" -C /tmp sh
