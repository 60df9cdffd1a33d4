#!/usr/bin/env bash
# Second run of issue 7's full soak (10 periods of 60 s, CPU backend) on the H200 machine's 16
# cores, where the development VM's stalls do not reach it. A call may run 600 s and the soak needs ~11 min, so it runs
# in its own process session across two back-to-back nvidia-h200 calls:
#   call 1: bash docs/results/h200-soak-2026-11-30-c/command.sh start    (starts it, then waits 570 s)
#   call 2: bash docs/results/h200-soak-2026-11-30-c/command.sh collect  (waits for the end, copies)
# Results land in $OUT (soak.log, machine.txt, soak.tgz with the normbench CSVs and normd's log).
set -uo pipefail
source .gpu/env.sh
RUN=/tmp/normd-soak-run
case "${1:-}" in
  start)
    B=/tmp/b; mkdir -p $B/server $B/bench/load "$RUN"
    ln -sf "$PWD/.gpu/bin/normd" $B/server/normd; ln -sf "$PWD/.gpu/bin/normbench" $B/bench/load/normbench
    { date -u; nproc; uname -r; } > "$RUN/machine.txt"
    setsid bash -c "python3 tests/soak/soak.py --build=$B --periods=10 --period=60 --out=$RUN/soak \
        > $RUN/soak.log 2>&1; echo \$? > $RUN/rc" < /dev/null > /dev/null 2>&1 &
    sleep 570
    cat "$RUN/soak.log"
    ;;
  collect)
    for _ in $(seq 1 170); do [[ -f "$RUN/rc" ]] && break; sleep 3; done
    echo "soak rc=$(cat "$RUN/rc" 2>/dev/null || echo 'not finished')"; date -u >> "$RUN/machine.txt"
    # One archive: a call brings back a limited number of files, and the per-period CSVs (per-second
    # windows) are what shows when in a period its tail latency rose.
    tar czf "$OUT/soak.tgz" -C "$RUN" soak; cp "$RUN/soak.log" "$RUN/machine.txt" "$OUT"/; cat "$RUN/soak.log"
    ;;
  *) echo "usage: $0 start|collect" >&2; exit 2 ;;
esac
