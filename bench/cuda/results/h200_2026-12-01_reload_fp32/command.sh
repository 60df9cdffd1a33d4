#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, seventh session): fp32 plain rows with the reload kernel
# (v8: blocks up to 1024 threads, so H 5120-8192 fit two vectors per thread) forced, against the
# automatic choice, 1024-65536 rows x issue 3's H, same run, twice. Logs under $OUT/f32.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/f32; rm -rf "$R"; mkdir -p "$R"
for i in 1 2; do
  timeout 60 normd_kernel_bench --csv --dtypes fp32 --modes plain --rows 1024,4096,16384,65536 --reload auto,on \
    > "$R/fp32_plain_$i.csv" 2>&1
  echo "bench $i rc=$?"
done
tar czf "$OUT/f32.tgz" -C /tmp f32
