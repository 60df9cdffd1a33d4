#!/usr/bin/env bash
# normd's CUDA backend end to end on the GPU machine, logs under $OUT (default ./out):
#   integration  the integration suite against normd --backend=cuda           -> integration_cuda.log
#   serve        normbench vs normd-echo (bf16, plain and fused), /metrics dump -> normbench_*.csv/.log, metrics.txt
#   stages       32 MiB requests at concurrency 8: normd's per-request h2d + kernel + d2h from /metrics,
#                and 1-row requests at concurrency 64 with one worker (requests per launch) -> stages.log
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
  for shape in ${SERVE_SHAPES:-"1:1,8,64,256" "64:1,8,64,256" "4096:1,8,64"}; do
    shape=${shape/:/ }
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
scrape() { python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$1/metrics').read().decode())"; }

if has stages; then
  stamp stages
  normd --backend=cuda --listen=127.0.0.1:50061 --metrics-listen=127.0.0.1:9465 2>"$OUT/normd_stages.log" &
  pid=$!
  wait_serving "$OUT/normd_stages.log" "normd serving"
  scrape 9465 > "$OUT/stages_before.txt"
  timeout 100 normbench --target=127.0.0.1:50061 --concurrency=8 --rows=4096 --hidden=4096 --dtype=bf16 \
    --duration=6s --warmup=1s 2>&1 | tail -3
  scrape 9465 > "$OUT/stages_after.txt"
  kill -TERM $pid; wait $pid
  python3 - "$OUT/stages_before.txt" "$OUT/stages_after.txt" <<'PY' 2>&1 | tee "$OUT/stages.log"
import re, sys
def read(path):
    values = {}
    for line in open(path):
        m = re.match(r'(normd_stage_duration_seconds_sum|normd_requests_total)\{([^}]*)\} (\S+)', line)
        if m: values[(m.group(1), m.group(2))] = float(m.group(3))
    return values
before, after = read(sys.argv[1]), read(sys.argv[2])
delta = {k: after[k] - before.get(k, 0.0) for k in after}
requests = sum(v for (name, labels), v in delta.items() if name == 'normd_requests_total' and 'Normalize"' in labels and 'code="OK"' in labels)
stage = {re.search(r'stage="(\w+)"', labels).group(1): v for (name, labels), v in delta.items() if name.startswith('normd_stage')}
gpu = stage.get('h2d', 0) + stage.get('kernel', 0) + stage.get('d2h', 0)
bytes_per_request = 2 * 4096 * 4096 * 2  # 32 MiB up and 32 MiB down
print(f"requests {requests:.0f}; per request: h2d {stage.get('h2d',0)/requests*1e3:.3f} ms, kernel {stage.get('kernel',0)/requests*1e3:.3f} ms, d2h {stage.get('d2h',0)/requests*1e3:.3f} ms, pack+unpack {stage.get('pack',0)/requests*1e3:.3f} ms")
print(f"h2d+kernel+d2h per request {gpu/requests*1e3:.3f} ms; 64 MiB at 55 GB/s = {bytes_per_request/55e9*1e3:.3f} ms; ratio {gpu/requests/(bytes_per_request/55e9):.2f} (target <= 1.2)")
PY
  normd --backend=cuda --workers-per-gpu=1 --listen=127.0.0.1:50062 --metrics-listen=127.0.0.1:9466 \
    2>"$OUT/normd_one_worker.log" &
  pid=$!
  wait_serving "$OUT/normd_one_worker.log" "normd serving"
  stamp "one worker per GPU, 1x4096 at c=64"
  timeout 60 normbench --target=127.0.0.1:50062 --concurrency=64 --rows=1 --hidden=4096 --dtype=bf16 \
    --duration=4s 2>&1 | tail -3 | tee -a "$OUT/stages.log"
  kill -TERM $pid; wait $pid
fi
stamp done
