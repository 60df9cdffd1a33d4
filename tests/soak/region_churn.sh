#!/usr/bin/env bash
# normd's memory while clients register, use and drop shared-memory regions in a loop
# (docs/SHARED_MEMORY.md). CLIENTS processes each run `normctl normalize --transport=shm` over and
# over: create an object, register it, one request through it, unregister, exit. normd's resident
# memory is sampled every second; at the end every region must be released (the regions and bytes
# gauges back to 0) and normd's resident memory within SLACK_MIB of where it started.
# Outside CI (it runs DURATION seconds). Usage: region_churn.sh BUILD_DIR [OUT_DIR]
# Environment: CLIENTS (8), DURATION (60), SLACK_MIB (64).
set -euo pipefail
build=${1:?usage: region_churn.sh BUILD_DIR [OUT_DIR]}
out=${2:-$build/region_churn}
clients=${CLIENTS:-8} duration=${DURATION:-60} slack_mib=${SLACK_MIB:-64}
mkdir -p "$out"
sock="$out/normd.sock"; rm -f "$sock"
metrics_port=$((20000 + RANDOM % 20000))
"$build/server/normd" --backend=cpu --shared-memory=system --listen=127.0.0.1:0 \
  --listen-unix="$sock" --metrics-listen="127.0.0.1:$metrics_port" > "$out/normd.log" 2>&1 &
normd_pid=$!
trap 'kill "$normd_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do grep -q "normd serving" "$out/normd.log" && break; sleep 0.1; done
grep -q "normd serving" "$out/normd.log" || { cat "$out/normd.log"; exit 1; }
/usr/bin/python3 - "$out" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(1)
np.save(f"{sys.argv[1]}/x.npy", rng.standard_normal((64, 4096), dtype=np.float32))
np.save(f"{sys.argv[1]}/w.npy", rng.standard_normal(4096, dtype=np.float32))
PY
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$normd_pid/status"; }
gauge() {
  /usr/bin/python3 -c "import urllib.request,sys; t=urllib.request.urlopen('http://127.0.0.1:$metrics_port/metrics').read().decode(); print(sum(float(l.split()[-1]) for l in t.splitlines() if l.startswith(sys.argv[1])))" "$1"
}
before=$(rss_kib)
end=$((SECONDS + duration))
client_loop() {
  local n=0 failed=0
  while ((SECONDS < end)); do
    if "$build/client/normctl" --target="unix:$sock" normalize --transport=shm \
        --input="$out/x.npy" --weight="$out/w.npy" --output="$out/y$1.npy" > /dev/null 2>> "$out/errors.log"; then
      n=$((n + 1))
    else
      failed=$((failed + 1))
    fi
  done
  echo "$n $failed" > "$out/client$1.count"
}
for i in $(seq 1 "$clients"); do client_loop "$i" & done
peak=$before
: > "$out/rss.log"
while ((SECONDS < end)); do
  r=$(rss_kib); echo "$SECONDS $r" >> "$out/rss.log"; ((r > peak)) && peak=$r; sleep 1
done
wait $(jobs -p | grep -v "^$normd_pid$") 2>/dev/null || true
rounds=$(cat "$out"/client*.count | awk '{s += $1} END {print s}')
failed=$(cat "$out"/client*.count | awk '{s += $2} END {print s}')
regions=$(gauge normd_shared_memory_regions)
bytes=$(gauge normd_shared_memory_bytes)
after=$(rss_kib)
{
  echo "clients=$clients duration=${duration}s rounds=$rounds failed=$failed"
  echo "normd RSS: before $((before / 1024)) MiB, peak $((peak / 1024)) MiB, after $((after / 1024)) MiB"
  echo "after: regions $regions, bytes mapped $bytes"
} | tee "$out/summary.txt"
ok=1
((failed == 0)) || { echo "FAIL: $failed rounds failed (errors.log)"; ok=0; }
((rounds > 0)) || { echo "FAIL: no round completed"; ok=0; }
[[ $regions == 0.0 && $bytes == 0.0 ]] || { echo "FAIL: regions not released"; ok=0; }
((after <= before + slack_mib * 1024)) || { echo "FAIL: RSS grew by more than $slack_mib MiB"; ok=0; }
((ok)) && echo PASS
