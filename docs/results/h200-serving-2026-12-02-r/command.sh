#!/usr/bin/env bash
# First nvidia-h200 call of the thirteenth session (2026-12-02). Logs under $OUT/r.tgz.
# .gpu: HEAD 7011123 (the twelfth session's final defaults). Two questions:
#  1. What the polling threads cost the 1-row points over one connection: the `cpu` step, each server
#     alone in turn (echo, then normd with four flag sets), two rounds, 1x4096 bf16 at c=8/64/256 plain
#     and c=64/256 with a residual: requests/s, busy cores, CPU by thread, requests per launch.
#  2. The stage target with the default two workers and with one (`stages` step, STAGES_WORKERS "2 1").
set -uo pipefail
source .gpu/env.sh
R=/tmp/r; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/r.tgz" -C /tmp r; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; lscpu; } > "$R/machine.txt"
OUT=$R/cpu STEPS=cpu DURATION=3s CPU_ROUNDS=2 \
  CPU_POINTS="1:8 1:64 1:256 1:64:residual 1:256:residual" \
  CPU_VARIANTS="default;--busy-poll-us=0;--parallel-copy-min-bytes=1048576;--busy-poll-us=0 --parallel-copy-min-bytes=1048576" \
  timeout 330 tests/gpu/run_server_h200.sh > "$R/cpu.log" 2>&1
echo "cpu rc=$?"; pack
OUT=$R/stages STEPS=stages timeout 150 tests/gpu/run_server_h200.sh > "$R/stages.log" 2>&1
echo "stages rc=$?"; pack
grep -E "^cpu r|requests per launch" "$R/cpu.log"
grep -E "Thread|Core|Socket|Model name" "$R/machine.txt"
grep -vE "^ +thread" "$R/stages.log" | tail -40
