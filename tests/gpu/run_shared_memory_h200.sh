#!/usr/bin/env bash
# Shared memory on the GPU machine (docs/SHARED_MEMORY.md), in one call of about five minutes.
# Files under $OUT (at most eight, as the device tool brings back):
#   gpu_tests.log   the shared-memory GPU tests (normd_shared_memory_gpu_test) against normd
#                   --backend=cuda --shared-memory=system,cuda, then the integration suite's
#                   SharedMemory* tests against the CUDA backend (system regions on the GPU)
#   memcheck.log    the same tests' cuda-region, unregister and large system-region cases with
#                   compute-sanitizer memcheck following normd (--target-processes all), where
#                   compute-sanitizer is found
#   normd.log       the normd that normbench measured; metrics.txt its /metrics after the runs;
#                   stages.txt what it did during each run (metrics_delta.py: stage times)
#   normbench.log   every normbench run's output; normbench.csv their rows, each prefixed by its run
#   summary.txt     the table printed last: the H200 targets (docs/SHARED_MEMORY.md), each against
#                   normd-echo; then normd_region_copy_bench's rates (the link's ceiling: a shared
#                   region's pages against pinned memory, one way and both ways at once)
# Usage: build (cmake --preset cuda-h200 && cmake --build --preset cuda-h200), put this script,
# tests/gpu/metrics_delta.py and the build's normd, normd-echo, normbench,
# normd_shared_memory_gpu_test, normd_integration_test, normd_region_client and
# normd_region_copy_bench in a bundle (a folder
# holding bin/ and lib/ with an env.sh that puts them on PATH and LD_LIBRARY_PATH), copy it to the
# GPU machine and run: bash BUNDLE/bin/run_shared_memory_h200.sh
# DURATION (default 2s) is normbench's measuring time per server and point.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bundle=${BUNDLE:-$here/..}
metrics_delta=$here/metrics_delta.py  # now: the bundle's env.sh sets a $here of its own
source "$bundle/env.sh"
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
DURATION=${DURATION:-2s}
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }
stamp start; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

export NORMD_BINARY=$(command -v normd) NORMD_TEST_BACKEND=cuda
export NORMD_REGION_CLIENT=$(command -v normd_region_client)
stamp gpu tests
timeout 120 normd_shared_memory_gpu_test --gtest_brief=1 > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests exit $?" | tee -a "$OUT/gpu_tests.log"; tail -4 "$OUT/gpu_tests.log"
# The CPU backend's shared-memory suites, here against the CUDA backend: system regions there.
timeout 120 normd_integration_test --gtest_brief=1 --gtest_filter='SharedMemory*' \
  >> "$OUT/gpu_tests.log" 2>&1
echo "integration (SharedMemory*, cuda) exit $?" | tee -a "$OUT/gpu_tests.log"
tail -3 "$OUT/gpu_tests.log"

sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
if [[ -n $sanitizer ]]; then
  stamp memcheck "$sanitizer"
  timeout 150 "$sanitizer" --tool memcheck --target-processes all \
    --error-exitcode 99 normd_shared_memory_gpu_test --gtest_brief=1 \
    --gtest_filter='*CudaRegions*:*Unregistering*:*LargeSystemRegion*' > "$OUT/memcheck.log" 2>&1
  echo "memcheck exit $?" | tee -a "$OUT/memcheck.log"; grep -E "ERROR SUMMARY|exit" "$OUT/memcheck.log"
else
  echo "compute-sanitizer not found: memcheck skipped" | tee "$OUT/memcheck.log"
fi

stamp servers
normd --backend=cuda --shared-memory=system,cuda --listen=127.0.0.1:50051 \
  --metrics-listen=127.0.0.1:9464 > "$OUT/normd.log" 2>&1 &
normd_pid=$!
normd-echo --listen=127.0.0.1:50052 > /tmp/echo.log 2>&1 &
echo_pid=$!
for _ in $(seq 1 300); do grep -q "normd serving" "$OUT/normd.log" && break; sleep 0.1; done
grep -q "normd serving" "$OUT/normd.log" || { echo "normd did not start:"; cat "$OUT/normd.log"; }

# bench LABEL NORMBENCH_FLAGS...: one normbench run against the echo, logged and its CSV kept, and
# what normd did meanwhile (requests per launch, time per stage) in stages.txt.
: > "$OUT/normbench.csv"
: > "$OUT/stages.txt"
scrape() {
  python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:9464/metrics').read().decode())"
}
bench() {
  local label=$1; shift
  stamp "normbench $label"
  scrape > /tmp/before.txt 2>&1
  timeout 60 normbench --target=127.0.0.1:50051 --baseline=127.0.0.1:50052 --dtype=bf16 \
    --hidden=4096 --duration="$DURATION" --window=1s --warmup=1s --stability=0 \
    --csv=/tmp/run.csv "$@" 2>&1 | tee -a "$OUT/normbench.log" | tail -6
  tail -n +2 /tmp/run.csv 2>/dev/null | sed "s/^/$label,/" >> "$OUT/normbench.csv"
  rm -f /tmp/run.csv
  scrape > /tmp/after.txt 2>&1
  { echo "== $label"; python3 "$metrics_delta" /tmp/before.txt /tmp/after.txt; } \
    >> "$OUT/stages.txt" 2>&1
}
bench shm_4096 --transport=shm --rows=4096 --concurrency=1,4
bench shm_4096_residual --transport=shm --rows=4096 --concurrency=1,4 --residual
bench bytes_4096 --transport=bytes --rows=4096 --concurrency=1
bench cuda_4096 --transport=cuda-ipc --rows=4096 --concurrency=1
bench cuda_4096_weight_id --transport=cuda-ipc --rows=4096 --concurrency=1 --weight-id
bench cuda_1 --transport=cuda-ipc --rows=1 --concurrency=1
bench shm_1_c64 --transport=shm --rows=1 --concurrency=64
bench cuda_1_c64 --transport=cuda-ipc --rows=1 --concurrency=64
bench bytes_1_c64 --transport=bytes --rows=1 --concurrency=64
scrape > "$OUT/metrics.txt" 2>&1
kill "$normd_pid" "$echo_pid"; wait "$normd_pid" "$echo_pid" 2>/dev/null

stamp summary
python3 - "$OUT/normbench.csv" > "$OUT/summary.txt" <<'PY'
import csv, sys
# Columns after the run label: normbench's CSV (server, concurrency, rows, hidden, dtype, requests,
# errors, throughput_rps, rows_per_s, payload_gbps, p50_us, ..., mean_batch_requests).
rows = {}
for r in csv.reader(open(sys.argv[1])):
    if len(r) < 16: continue
    label, server, c = r[0], r[1], int(float(r[2]))
    rows[(label, server, c)] = dict(rps=float(r[8]), gbps=float(r[10]), p50=float(r[11]),
                                    batch=float(r[15]), errors=int(r[7]))
def get(label, c, server="target"): return rows.get((label, server, c))
print(f"{'run':20} {'c':>3} {'req/s':>9} {'GB/s each way':>14} {'p50 us':>8} {'echo p50':>9} "
      f"{'batch':>6} {'errors':>6}")
for (label, server, c), t in sorted(rows.items()):
    if server != "target": continue
    e = get(label, c, "baseline") or {}
    print(f"{label:20} {c:>3} {t['rps']:>9.1f} {t['gbps'] / 2:>14.2f} {t['p50']:>8.0f} "
          f"{e.get('p50', float('nan')):>9.0f} {t['batch']:>6.2f} {t['errors']:>6}")
def check(name, ok, detail): print(f"{'PASS' if ok else 'MISS'}  {name}: {detail}")
for label in ("shm_4096", "shm_4096_residual"):
    for c, target in ((1, 30), (4, 45)):
        t = get(label, c)
        if t: check(f"{label} c={c} >= {target} GB/s each way", t["gbps"] / 2 >= target,
                    f"{t['gbps'] / 2:.1f} GB/s, p50 {t['p50']:.0f} us")
for label, margin in (("cuda_4096", 40), ("cuda_4096_weight_id", 40), ("cuda_1", 20)):
    t, e = get(label, 1), get(label, 1, "baseline")
    if t and e: check(f"{label} p50 within {margin} us of the echo's", t["p50"] - e["p50"] <= margin,
                      f"{t['p50']:.0f} - {e['p50']:.0f} = {t['p50'] - e['p50']:.0f} us")
b = get("bytes_1_c64", 64)
for label in ("shm_1_c64", "cuda_1_c64"):
    t = get(label, 64)
    if t and b: check(f"{label} >= 16 requests per launch, throughput >= bytes'",
                      t["batch"] >= 16 and t["rps"] >= b["rps"],
                      f"{t['batch']:.1f} per launch, {t['rps']:.0f} against {b['rps']:.0f} req/s")
PY
stamp copy engines
timeout 60 normd_region_copy_bench --mib 32 --chunks 16 >> "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
stamp end
