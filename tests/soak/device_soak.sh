#!/usr/bin/env bash
# The full soak (10 periods of 60 s) on the GPU machine's 16 cores, from the bundle in .gpu/
# (normd and normbench; the soak uses the CPU backend). Each remote command on that machine may
# run at most 600 s and the soak takes ~11 min, so it runs detached (setsid) across two
# back-to-back commands (an idle machine is released after 30 s, so the second must follow at once):
#   call 1: bash tests/soak/device_soak.sh start [soak.py flags]   (starts it, returns after 570 s)
#   call 2: bash tests/soak/device_soak.sh collect                  (waits for the end, copies)
# Results land in $OUT: soak.log, machine.txt (start, cores, kernel, end) and soak.tgz (normbench's CSVs
# per period and shape, normd's log: one archive, as a call brings back a limited number of files).
set -uo pipefail
source .gpu/env.sh
RUN=/tmp/normd-soak-run
case "${1:-}" in
  start)
    shift
    B=/tmp/normd-soak-build; mkdir -p $B/server $B/bench/load "$RUN"
    ln -sf "$PWD/.gpu/bin/normd" $B/server/normd; ln -sf "$PWD/.gpu/bin/normbench" $B/bench/load/normbench
    { date -u; nproc; uname -r; echo "soak.py flags: $*"; } > "$RUN/machine.txt"
    setsid bash -c "python3 tests/soak/soak.py --build=$B --periods=10 --period=60 --out=$RUN/soak $* \
        > $RUN/soak.log 2>&1; echo \$? > $RUN/rc" < /dev/null > /dev/null 2>&1 &
    sleep 570
    cat "$RUN/soak.log"
    ;;
  collect)
    for _ in $(seq 1 170); do [[ -f "$RUN/rc" ]] && break; sleep 3; done
    echo "soak rc=$(cat "$RUN/rc" 2>/dev/null || echo 'not finished')"; date -u >> "$RUN/machine.txt"
    tar czf "$OUT/soak.tgz" -C "$RUN" soak; cp "$RUN/soak.log" "$RUN/machine.txt" "$OUT"/; cat "$RUN/soak.log"
    ;;
  *) echo "usage: $0 start [soak.py flags] | collect" >&2; exit 2 ;;
esac
