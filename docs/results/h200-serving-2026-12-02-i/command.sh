#!/usr/bin/env bash
# Third nvidia-h200 call of the eleventh session (2026-12-02). Logs under $OUT/i.tgz.
# .gpu: this commit's normd, normd-echo, and normbench with --connections (its calls taking turns over
# several connections, as several client processes would send them).
# normd_ab with normbench --connections=8: normd answering alone (--reply-threads=1, a) against four
# reply threads (b), each against the same echo, in turn, two rounds of 3 s, at 1-row requests over
# c = 8, 64, 256, with a residual at c = 64, and 64 rows at c = 64.
set -uo pipefail
source .gpu/env.sh
R=/tmp/i; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/i.tgz" -C /tmp i; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/ab STEPS=normd_ab DURATION=3s AB_ROUNDS=2 AB_FLAGS_A=--reply-threads=1 AB_FLAGS_B=--reply-threads=4 \
  AB_NORMBENCH_FLAGS=--connections=8 AB_POINTS="1:8 1:64 1:64:residual 1:256 64:64" \
  timeout 330 tests/gpu/run_server_h200.sh > "$R/ab.log" 2>&1
echo "ab rc=$?"; pack
grep -E "^== .*normd_ab|target/baseline|server time|per launch|^target|^baseline" "$R/ab.log" | tail -80
