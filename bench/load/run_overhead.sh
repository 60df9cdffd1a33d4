#!/usr/bin/env bash
# The serving-overhead measurement: normd (CPU backend) against normd-echo, both on loopback on
# this machine, measured by one normbench --baseline run per shape, repeated REPS times; then
# summarize_overhead.py prints the median ratio per point.
#
#   bench/load/run_overhead.sh [BUILD_DIR] [OUT_DIR]      (defaults: build/cpu, /tmp/normd-overhead)
#   REPS=5 DURATION=5s bench/load/run_overhead.sh
#
# Nothing else should run on the machine meanwhile: on a 2-core VM a compile halves either server.
set -euo pipefail
build=${1:-build/cpu}
out=${2:-/tmp/normd-overhead}
reps=${REPS:-3}
duration=${DURATION:-5s}
normd_port=${NORMD_PORT:-50171}
echo_port=${ECHO_PORT:-50172}
mkdir -p "$out"

"$build/server/normd" --backend=cpu --listen="127.0.0.1:$normd_port" --metrics-listen=127.0.0.1:0 \
  >"$out/normd.log" 2>&1 &
normd_pid=$!
"$build/bench/load/normd-echo" --listen="127.0.0.1:$echo_port" >"$out/echo.log" 2>&1 &
echo_pid=$!
trap 'kill $normd_pid $echo_pid 2>/dev/null; wait 2>/dev/null' EXIT
sleep 1.5

{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p')"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "reps: $reps, duration per server and point: $duration"
} | tee "$out/README.txt"

for rep in $(seq 1 "$reps"); do
  for rows in 1 64; do
    "$build/bench/load/normbench" --target="127.0.0.1:$normd_port" --baseline="127.0.0.1:$echo_port" \
      --concurrency=1,16,64 --rows="$rows" --hidden=4096 --dtype=bf16 --duration="$duration" \
      --csv="$out/r${rows}_rep${rep}.csv" >"$out/r${rows}_rep${rep}.txt" 2>&1
    grep "throughput target/baseline" "$out/r${rows}_rep${rep}.txt" | sed "s/^/rows=$rows rep=$rep /"
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/README.txt"
python3 "$(dirname "$0")/summarize_overhead.py" "$out"/r*_rep*.csv | tee "$out/summary.md"
