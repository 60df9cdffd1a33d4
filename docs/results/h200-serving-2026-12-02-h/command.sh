#!/usr/bin/env bash
# Second nvidia-h200 call of the eleventh session (2026-12-02). Logs under $OUT/h.tgz.
# .gpu: this commit's normd (reply threads; its own threads named normd-worker, normd-copy,
# normd-reply), normd-echo, normbench.
# The cpu step (tests/gpu/cpu_point.py): normbench against one server at a time, the echo then normd
# with the worker answering alone (--reply-threads=1, as before call g), with reply threads (the
# automatic 4), and answering alone without busy polling; two rounds of 3 s at 1-row requests over
# c = 1, 8, 64, 256 and 64 rows at c = 64: the machine's busy cores, the server's by thread, CPU
# microseconds per request.
set -uo pipefail
source .gpu/env.sh
R=/tmp/h; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/h.tgz" -C /tmp h; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/cpu STEPS=cpu DURATION=3s CPU_ROUNDS=2 \
  CPU_VARIANTS="--reply-threads=1;default;--reply-threads=1 --busy-poll-us=0" \
  CPU_POINTS="1:64 1:256 64:64 1:1 1:8" timeout 420 tests/gpu/run_server_h200.sh > "$R/cpu.log" 2>&1
echo "cpu rc=$?"; pack
grep -E "^cpu |^  thread|requests per launch|target/baseline" "$R/cpu.log"
