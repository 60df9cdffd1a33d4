#!/usr/bin/env bash
# normd across the GPUs of one host, logs under $OUT: the integration suite with --gpus=0,1
# (through NORMD_GPUS, normd's environment twin of --gpus), then normbench with 64x4096 bf16 requests at
# concurrency 64 and 256 against normd on two GPUs (target) and on one (baseline), alternating, and the
# two-GPU server's /metrics with its per-device stage times.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/.gpu/env.sh"
OUT=${OUT:-$root/out}
mkdir -p "$OUT"
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }
wait_serving() { for _ in $(seq 1 300); do grep -q "normd serving" "$1" && return 0; sleep 0.1; done; cat "$1"; return 1; }
stamp start; nvidia-smi --query-gpu=index,name --format=csv
stamp integration
NORMD_GPUS=0,1 NORMD_BINARY=$(command -v normd) NORMD_TEST_BACKEND=cuda timeout 200 normd_integration_test \
  --gtest_brief=1 2>&1 | tee "$OUT/integration_two_gpus.log" | tail -8
stamp serve
normd --backend=cuda --gpus=0,1 --listen=127.0.0.1:50051 --metrics-listen=127.0.0.1:9464 2>"$OUT/normd_two.log" &
two=$!
normd --backend=cuda --gpus=0 --listen=127.0.0.1:50052 --metrics-listen=127.0.0.1:9465 2>"$OUT/normd_one.log" &
one=$!
wait_serving "$OUT/normd_two.log" && wait_serving "$OUT/normd_one.log"
timeout 150 normbench --target=127.0.0.1:50051 --baseline=127.0.0.1:50052 --concurrency=64,256 --rows=64 \
  --hidden=4096 --dtype=bf16 --duration=5s --warmup=1s --csv="$OUT/two_vs_one.csv" 2>&1 | tee "$OUT/two_vs_one.log"
python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:9464/metrics').read().decode())" \
  > "$OUT/metrics_two.txt"
grep -E "normd_stage_duration_seconds_(sum|count)|normd_launches_total|normd_batch_requests_(sum|count)" "$OUT/metrics_two.txt"
top -b -n 1 | head -15
kill -TERM $two $one; wait
stamp done
