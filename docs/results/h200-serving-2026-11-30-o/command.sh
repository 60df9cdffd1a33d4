#!/usr/bin/env bash
# Fourth nvidia-h200 call of 2026-11-30's fourth session, same normd (f186757): the stages step with
# one worker (--workers-per-gpu=1: a worker's uploads are serialized on its stream, so each launch's
# h2d stage is its own time on the link, not time shared with another worker's uploads), then again
# with the default two workers (as in -n, which measured 1.15 plain and 1.56 with residual).
# Logs under $OUT/u (u.tgz).
set -uo pipefail
source .gpu/env.sh
R=/tmp/u; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/u.tgz" -C /tmp u; }
OUT=$R/w1 STEPS=stages STAGES_FLAGS=--workers-per-gpu=1 timeout 120 tests/gpu/run_server_h200.sh > "$R/stages_w1.log" 2>&1
echo "stages w1 rc=$?"; pack
OUT=$R/w2 STEPS=stages timeout 120 tests/gpu/run_server_h200.sh > "$R/stages_w2.log" 2>&1
echo "stages w2 rc=$?"; pack
grep -E "^4096|ratio|per launch|server time" "$R/stages_w1.log" "$R/stages_w2.log"
