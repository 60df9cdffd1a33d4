#!/usr/bin/env bash
# The development VM (Debian 12, 2 cores, CPU backend): normd that leaves an inline weight in the
# received slices (NEW, build/ci/server/normd of f946e50: d54e11b, with c226808's gather of a
# misaligned weight in CpuExecutor) head to head with the previous build (PREV, 0bb50ae), and each
# against the echo, at 1x4096 bf16 with the weight inline (normbench's default), window pairs of 1 s
# (six a point), both orders. Then perf: each server's own-time profile under 1x4096 c=64 over eight
# connections.
set -uo pipefail
NEW=${NEW:-build/ci/server/normd}; PREV=${PREV:-/tmp/normd-prev-weight}
NB=${NB:-build/ci/bench/load/normbench}; ECHO=${ECHO:-build/ci/bench/load/normd-echo}
$NEW --backend=cpu --listen=127.0.0.1:50081 --metrics-listen=127.0.0.1:9481 2>/tmp/weight_new.log & a=$!
$PREV --backend=cpu --listen=127.0.0.1:50082 --metrics-listen=127.0.0.1:9482 2>/tmp/weight_prev.log & b=$!
$ECHO --listen=127.0.0.1:50083 2>/tmp/weight_echo.log & e=$!
sleep 2
point() {  # target baseline label, then normbench flags
  local t=$1 base=$2 label=$3; shift 3
  echo "== $label $*"
  $NB --target=127.0.0.1:$t --baseline=127.0.0.1:$base --rows=1 --hidden=4096 --dtype=bf16 --duration=6s \
    --window=1s --warmup=1s --stability=0 --summary-windows=0 "$@" 2>&1 | grep -E "^(target|baseline) |target/baseline"
}
for flags in "--concurrency=1" "--concurrency=64" "--concurrency=64 --connections=8" "--concurrency=64 --residual"; do
  point 50081 50082 "new/prev" $flags
  point 50082 50081 "prev/new" $flags
  point 50081 50083 "new/echo" $flags
  point 50082 50083 "prev/echo" $flags
done
for side in "new $a 50081" "prev $b 50082"; do
  set -- $side
  perf record -F 2000 -p "$2" -o /tmp/weight_$1.perf -- sleep 5 > /dev/null 2>&1 &
  p=$!
  $NB --target=127.0.0.1:$3 --rows=1 --hidden=4096 --dtype=bf16 --concurrency=64 --connections=8 \
    --duration=6s --window=1s --warmup=0.5s --stability=0 > /dev/null 2>&1
  wait $p
  # Self time only: normd is built without frame pointers, so perf's call graphs (and a "children"
  # share) are not to be trusted.
  echo "== perf $1: share of samples of their own (gRPC's nexting threads): the parse, malloc, free, memcpy"
  perf report -i /tmp/weight_$1.perf --no-children --stdio -g none 2>/dev/null | grep nexting_thread |
    grep -E "ParseSkeleton|\] (_int_malloc|malloc|_int_free|cfree|free|__memmove_avx512_unaligned_erms)$"
  echo "== perf $1: the 25 symbols with the most samples of their own"
  perf report -i /tmp/weight_$1.perf --no-children --stdio -g none 2>/dev/null | grep -v "^#" | grep -v "^ *$" | head -25
done
kill $a $b $e
