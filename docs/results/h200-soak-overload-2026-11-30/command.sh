#!/usr/bin/env bash
# Issue 7's overload and soak scripts on the H200 machine's 16 cores (CPU backend; normd and the load
# generator side by side as on the development VM, but with 8x the cores), 2026-11-30 ~04:05 UTC, one
# nvidia-h200 call. The soak's periods are 40 s, not 60 s (the call's 600 s limit): 6 min 40 s in all.
set -uo pipefail
source .gpu/env.sh
B=/tmp/b; mkdir -p $B/server $B/bench/load
ln -sf "$PWD/.gpu/bin/normd" $B/server/normd; ln -sf "$PWD/.gpu/bin/normbench" $B/bench/load/normbench
{ date -u; nproc; } > "$OUT/machine.txt"
timeout 150 python3 tests/soak/overload.py --build=$B --seconds=30 --out="$OUT/overload_cpu" > "$OUT/overload_cpu.log" 2>&1
echo "overload rc=$?"; tail -5 "$OUT/overload_cpu.log"
timeout 430 python3 tests/soak/soak.py --build=$B --periods=10 --period=40 --out="$OUT/soak" > "$OUT/soak.log" 2>&1
echo "soak rc=$?"; tail -16 "$OUT/soak.log"
