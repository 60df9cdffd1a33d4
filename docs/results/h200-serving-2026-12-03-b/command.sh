#!/usr/bin/env bash
# Second nvidia-h200 call of the seventeenth session (2026-12-03). Logs under $OUT/b.tgz.
# .gpu: normd with the uploads of a GPU's pipelined launches taking turns across its workers
# (server/upload_turns.h); normd-prev: call a's build (the commit before); normd-echo, normbench, the
# integration suite (LargeRequestsSharingLaunchesAreEachCorrect now with one and two workers).
#  1. The integration suite against normd --backend=cuda.
#  2. The stage target, 32 MiB requests at c=8, two workers (the default) and one: call a measured
#     0.76 / 1.07 (plain / residual) with two and 0.68 / 0.66 with one before the change.
#  3. Throughput, new (target) against prev (baseline), 4096x4096 at c=8 plain and with a residual,
#     eight 2 s window pairs each.
set -uo pipefail
source .gpu/env.sh
R=/tmp/b; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/b.tgz" -C /tmp b; }
stop_all() { pkill -TERM -x normbench; pkill -TERM -x normd; pkill -TERM -x normd-prev; pkill -TERM -x normd-echo; \
  sleep 3; pkill -KILL -x normbench; pkill -KILL -x normd; pkill -KILL -x normd-prev; pkill -KILL -x normd-echo; sleep 1; }
run=tests/gpu/run_server_h200.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; free -g; } > "$R/machine.txt"
OUT=$R/integration STEPS=integration timeout 320 $run > "$R/integration.log" 2>&1
echo "integration rc=$?"; stop_all; pack
OUT=$R/stages STEPS=stages STAGES_WORKERS="2 1" timeout 150 $run > "$R/stages.log" 2>&1
echo "stages rc=$?"; stop_all; pack
OUT=$R/pair STEPS=pair DURATION=16s PAIR_NORMD_B=normd-prev PAIR_POINTS="4096:8 4096:8:residual" \
  PAIR_FLAGS_A=--max-queue-bytes=4294967296 PAIR_FLAGS_B=--max-queue-bytes=4294967296 \
  PAIR_NORMBENCH_FLAGS="--stability=0 --summary-windows=0 --window=2s" timeout 170 $run > "$R/pair.log" 2>&1
echo "pair rc=$?"; stop_all; pack
tail -5 "$R/integration.log"
echo "== stages"; grep -E "workers:|^target|ratio|per launch|GPU 0" "$R/stages.log"
echo "== pair"; grep -E "^== |^(target|baseline) |target/baseline|per launch:" "$R/pair.log"
