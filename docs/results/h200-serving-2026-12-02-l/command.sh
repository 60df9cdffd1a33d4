#!/usr/bin/env bash
# Sixth nvidia-h200 call of the eleventh session (2026-12-02). Logs under $OUT/l.tgz.
# .gpu: as in call k. What the copy helpers' polling costs once the machine is busy: the cpu step
# with normbench --connections=8, one server at a time (the echo, normd's defaults, --copy-spin-us=0
# (helpers sleep between launches), --copy-threads=1 (no helpers)), at 1x4096 c=64, 3 s each.
set -uo pipefail
source .gpu/env.sh
R=/tmp/l; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/l.tgz" -C /tmp l; }
OUT=$R/cpu STEPS=cpu DURATION=3s CPU_ROUNDS=1 CPU_NORMBENCH_FLAGS=--connections=8 \
  CPU_VARIANTS="default;--copy-spin-us=0;--copy-threads=1" \
  CPU_POINTS="1:64" timeout 90 tests/gpu/run_server_h200.sh > "$R/cpu.log" 2>&1
echo "cpu rc=$?"; pack
grep -E "^cpu |^  thread|requests per launch|per launch:|server time" "$R/cpu.log"
