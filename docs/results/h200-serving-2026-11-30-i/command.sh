#!/usr/bin/env bash
# Issue 8's grid with the session's final normd (ResponseWire with the 32 MiB protobuf exception,
# 49f75a4), 4 s per point instead of 2 (single 2-s points moved by up to 0.17 between runs), on the
# H200, 2026-11-30: serve step, default flags but --max-queue-bytes=4 GiB so that 64 clients of 32 MiB
# requests all fit. Run from the repository root with the bundle in .gpu; logs under $OUT/ri.
set -uo pipefail
source .gpu/env.sh
R=/tmp/ri; rm -rf "$R"; mkdir -p "$R"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R STEPS=serve DURATION=4s SERVE_FLAGS=--max-queue-bytes=4294967296 \
  SERVE_SHAPES="1:1,8,64,256 64:1,8,64,256 4096:1,8,64" timeout 560 tests/gpu/run_server_h200.sh > "$R/run.log" 2>&1
tar czf "$OUT/ri.tgz" -C /tmp ri
grep -E "^== |throughput target|per launch|server time" "$R/run.log"
