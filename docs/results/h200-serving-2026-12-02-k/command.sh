#!/usr/bin/env bash
# Fifth nvidia-h200 call of the eleventh session (2026-12-02). Logs under $OUT/k.tgz.
# .gpu: the session's final normd (reply threads by default), normd-echo, normbench.
# Where normd's time goes over eight connections, and which batching setting limits it: the cpu step
# with normbench --connections=8, one server at a time (the echo, then normd with the defaults, with
# --fill-first-rows=0 (requests dealt to the least loaded of the two workers), with
# --company-wait-us=0, and with both), at 1x4096 c=64 and c=256, 3 s each.
set -uo pipefail
source .gpu/env.sh
R=/tmp/k; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/k.tgz" -C /tmp k; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/cpu STEPS=cpu DURATION=3s CPU_ROUNDS=1 CPU_NORMBENCH_FLAGS=--connections=8 \
  CPU_VARIANTS="default;--fill-first-rows=0;--company-wait-us=0;--fill-first-rows=0 --company-wait-us=0" \
  CPU_POINTS="1:64 1:256" timeout 200 tests/gpu/run_server_h200.sh > "$R/cpu.log" 2>&1
echo "cpu rc=$?"; pack
grep -E "^cpu |^  thread|requests per launch|per launch:|server time" "$R/cpu.log"
