#!/usr/bin/env bash
# Fourth nvidia-h200 call of the twelfth session (2026-12-02). Logs under $OUT/p.tgz. .gpu: as call o.
# The stage target again (32 MiB requests at c = 8: device time per request against bytes over the
# link), after call o's 2.10 with a residual (0.72 in the sixth session): the stages step with the
# default two workers, then with --workers-per-gpu=1, whose launches never share the link with
# another worker's (two workers' concurrent uploads each take longer, and both are counted).
set -uo pipefail
source .gpu/env.sh
R=/tmp/p; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/p.tgz" -C /tmp p; }
run=tests/gpu/run_server_h200.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/w2 STEPS=stages timeout 80 $run > "$R/stages_w2.log" 2>&1
echo "w2 rc=$?"; pack
OUT=$R/w1 STEPS=stages STAGES_FLAGS=--workers-per-gpu=1 timeout 80 $run > "$R/stages_w1.log" 2>&1
echo "w1 rc=$?"; pack
grep -E "at c=8:|per launch|device time|req/s|^target" "$R"/stages_w2.log "$R"/stages_w1.log
