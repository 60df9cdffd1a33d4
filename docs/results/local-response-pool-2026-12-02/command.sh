#!/usr/bin/env bash
# The development VM (Debian 12, 2 cores, CPU backend): normd with LargeBufferPool (NEW, default
# build/cuda-h200/server/normd of ed6f4e2) head to head with the previous build (PREV, d734c10), and
# each against the echo, at 4096x4096 bf16 (32 MiB), window pairs of 2 s (eight a point), both orders.
set -uo pipefail
NEW=${NEW:-build/cuda-h200/server/normd}; PREV=${PREV:-/tmp/normd-prev}
NB=${NB:-build/ci/bench/load/normbench}; ECHO=${ECHO:-build/ci/bench/load/normd-echo}
$NEW --backend=cpu --listen=127.0.0.1:50081 --metrics-listen=127.0.0.1:9481 2>/tmp/pool_new.log & a=$!
$PREV --backend=cpu --listen=127.0.0.1:50082 --metrics-listen=127.0.0.1:9482 2>/tmp/pool_prev.log & b=$!
$ECHO --listen=127.0.0.1:50083 2>/tmp/pool_echo.log & e=$!
sleep 2
point() {  # target baseline label, then normbench flags
  local t=$1 base=$2 label=$3; shift 3
  echo "== $label $*"
  $NB --target=127.0.0.1:$t --baseline=127.0.0.1:$base --rows=4096 --duration=16s --window=2s --warmup=2s \
    --stability=0 --summary-windows=0 "$@" 2>&1 | grep -E "^(target|baseline) |target/baseline"
}
for flags in "--concurrency=1" "--concurrency=4" "--concurrency=1 --residual"; do
  point 50081 50082 "new/prev" $flags
  point 50082 50081 "prev/new" $flags
  point 50081 50083 "new/echo" $flags
  point 50082 50083 "prev/echo" $flags
done
curl -s 127.0.0.1:9481/metrics | grep "^normd_response_pool"
kill $a $b $e
