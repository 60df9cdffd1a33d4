#!/usr/bin/env bash
# The development VM (Debian 12, 2 cores, AMD EPYC), CPU backend: normd with inlineable unary reactors
# (NEW, this commit's build/ci/server/normd) head to head against the build before it (PREV, 7011123's
# normd with only server/normalizer_service.cc reverted), and each against the echo; ten 1 s window
# pairs a point (six against the echo). Usage from the repository root after `cmake --build build/ci`:
#   NEW=build/ci/server/normd PREV=/tmp/normd-prev-cpu bash docs/results/local-inline-ondone-2026-12-02/command.sh
set -uo pipefail
NEW=${NEW:-build/ci/server/normd}; PREV=${PREV:?the previous build of normd}
bench=build/ci/bench/load/normbench
"$NEW" --listen=127.0.0.1:50461 --metrics-listen=127.0.0.1:0 2>/tmp/new.log &
"$PREV" --listen=127.0.0.1:50462 --metrics-listen=127.0.0.1:0 2>/tmp/prev.log &
build/ci/bench/load/normd-echo --listen=127.0.0.1:50463 2>/tmp/echo.log &
sleep 2
pair() {  # LABEL TARGET_PORT BASELINE_PORT ROWS C SECONDS
  echo "$1 rows=$4 c=$5: $("$bench" --target=127.0.0.1:$2 --baseline=127.0.0.1:$3 --concurrency=$5 --rows=$4 \
    --duration=$6s --stability=0 --summary-windows=0 --warmup=1s | grep "window pairs" | sed 's/^ *//')"
}
date -u
for c in 1 8 64; do pair new/prev 50461 50462 1 $c 10; done
for c in 1 8 64; do pair prev/new 50462 50461 1 $c 10; done
for c in 1 8 64; do pair new/prev 50461 50462 64 $c 10; done
for c in 1 8 64; do pair new/echo 50461 50463 1 $c 6; pair prev/echo 50462 50463 1 $c 6; done
kill %1 %2 %3
