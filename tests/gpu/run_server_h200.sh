#!/usr/bin/env bash
# normd's CUDA backend end to end on the GPU machine, logs under $OUT (default ./out):
#   integration  the integration suite against normd --backend=cuda           -> integration_cuda.log
#   serve        normbench vs normd-echo (bf16, plain and fused), /metrics dump -> normbench_*.csv/.log, metrics.txt
# Usage (repository root, after `../shared/gpu/bundle.sh build/cuda-h200 .gpu`):
#   STEPS="integration serve" tests/gpu/run_server_h200.sh
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/.gpu/env.sh"
OUT=${OUT:-$root/out}
mkdir -p "$OUT"
STEPS=${STEPS:-"integration serve"}
DURATION=${DURATION:-3s}
has() { [[ " $STEPS " == *" $1 "* ]]; }
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }

stamp start; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
if has integration; then
  stamp integration
  NORMD_BINARY=$(command -v normd) NORMD_TEST_BACKEND=cuda timeout 300 normd_integration_test --gtest_brief=1 \
    2>&1 | tee "$OUT/integration_cuda.log" | tail -30
fi

wait_serving() {  # port: waits for the "serving" line of a log file
  for _ in $(seq 1 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "server did not start: $(cat "$1")"; return 1
}

if has serve; then
  stamp serve
  normd --backend=cuda --listen=127.0.0.1:50051 --metrics-listen=127.0.0.1:9464 2>"$OUT/normd.log" &
  normd_pid=$!
  normd-echo --listen=127.0.0.1:50052 2>"$OUT/echo.log" &
  echo_pid=$!
  wait_serving "$OUT/normd.log" "normd serving" && wait_serving "$OUT/echo.log" "listening on"
  for shape in "1 1,8,64,256" "64 1,8,64,256" "4096 1,8,64"; do
    set -- $shape
    for mode in plain residual; do
      flag=""; [[ $mode == residual ]] && flag=--residual
      stamp "normbench rows=$1 $mode"
      timeout 200 normbench --target=127.0.0.1:50051 --baseline=127.0.0.1:50052 --concurrency="$2" --rows="$1" \
        --hidden=4096 --dtype=bf16 $flag --duration="$DURATION" --warmup=1s \
        --csv="$OUT/normbench_${1}x4096_${mode}.csv" 2>&1 | tee "$OUT/normbench_${1}x4096_${mode}.log" | tail -12
    done
  done
  python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:9464/metrics').read().decode())" \
    > "$OUT/metrics.txt"
  kill -TERM "$normd_pid" "$echo_pid"; wait "$normd_pid"; echo "normd exit $?"
  tail -3 "$OUT/normd.log"
fi
stamp done
