#!/usr/bin/env bash
# normd's whole serving grid on the GPU machine in one command: normd --backend=cuda (two workers, the
# default) against normd-echo, bf16 H 4096, requests {1x4096, 64x4096, 4096x4096} x {plain, + residual}
# x concurrency {1, 8, 64, 256}; then the stage target (32 MiB at c=8, two workers and one) and
# requests per launch at 1x4096 c=64. Every point is measured in window pairs (normbench
# --stability=0 --summary-windows=0), and its figure is the median of the pairs' throughput ratios.
# The parts are run_server_h200.sh's steps with the settings of the runs behind docs/PERFORMANCE.md's
# H200 tables, one after another, every server stopped in between (a normd left draining would hold
# the next one's metrics port):
#   small       1x4096 and 64x4096, every concurrency: six 1 s pairs a point                    (~6 min)
#   large_c1_c8 4096x4096 at c=1 and 8: four 2 s pairs (--max-queue-bytes=4 GiB)                  (~2 min)
#   large_c64   4096x4096 at c=64: three 6 s pairs (a request takes ~2 s there)                  (~3 min)
#   large_c256  4096x4096 at c=256, plain then + residual, each after 30 s of load: three 20 s
#               pairs, --max-queue-bytes=20 GiB for 256 x 64 MiB in flight (~120 of the machine's
#               125 GiB in use at the peak with a residual)                                      (~7 min)
#   stages      the stage target and requests per launch                                         (~2 min)
# Then a summary ($OUT/summary.txt: each point's window-pair median and range), one CSV per request
# kind with every concurrency ($OUT/<rows>x4096_<mode>.csv) and, where python3 has matplotlib, the
# latency-against-throughput plots (bench/load/plot_normbench.py; else run it on the CSVs elsewhere).
# GRID_QUICK=1: a few points in short windows, no 32 MiB c=256 points, the stage target with two
# workers only: a check of the script itself (~2.5 minutes).
# Usage (repository root), with .gpu/ a bundle of a cuda-h200 build: a folder holding its bin/ and
# lib/ with an env.sh that puts them on PATH and LD_LIBRARY_PATH:
#   OUT=/tmp/grid tests/gpu/run_grid_h200.sh
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/.gpu/env.sh"
OUT=${OUT:-$root/out/grid}
mkdir -p "$OUT"
run=$root/tests/gpu/run_server_h200.sh
quick=${GRID_QUICK:-0}
pairs="--stability=0 --summary-windows=0"

stop_all() {
  pkill -TERM -x normbench; pkill -TERM -x normd; pkill -TERM -x normd-echo; sleep 3
  pkill -KILL -x normbench; pkill -KILL -x normd; pkill -KILL -x normd-echo; sleep 1
}
# part NAME LIMIT_S: run_server_h200.sh with the caller's settings (assignments before the call),
# logs in $OUT/NAME/ and $OUT/NAME.log; a part that overruns its limit is stopped, and the next runs.
part() {
  local name=$1 limit=$2
  echo "== $(date -u +%H:%M:%S) $name"
  OUT=$OUT/$name timeout "$limit" "$run" >"$OUT/$name.log" 2>&1
  echo "$name: exit $?"
  stop_all
}

{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; free -g; } >"$OUT/machine.txt"
q4=--max-queue-bytes=4294967296
q20=--max-queue-bytes=21474836480
if [[ $quick == 1 ]]; then
  STEPS=serve DURATION=2s SERVE_SHAPES="1:8,64 64:8" SERVE_NORMBENCH_FLAGS="$pairs" part small 60
  STEPS=serve DURATION=2s SERVE_FLAGS=$q4 SERVE_SHAPES="4096:8" SERVE_NORMBENCH_FLAGS="$pairs --window=1s" \
    part large_c1_c8 40
  STEPS=serve DURATION=4s SERVE_FLAGS=$q4 SERVE_SHAPES="4096:64" SERVE_NORMBENCH_FLAGS="$pairs --window=2s" \
    part large_c64 60
  STEPS=stages STAGES_WORKERS=2 part stages 70
else
  STEPS=serve DURATION=6s SERVE_SHAPES="1:1,8,64,256 64:1,8,64,256" SERVE_NORMBENCH_FLAGS="$pairs" part small 420
  STEPS=serve DURATION=8s SERVE_FLAGS=$q4 SERVE_SHAPES="4096:1,8" SERVE_NORMBENCH_FLAGS="$pairs --window=2s" \
    part large_c1_c8 150
  STEPS=serve DURATION=18s SERVE_FLAGS=$q4 SERVE_SHAPES="4096:64" SERVE_NORMBENCH_FLAGS="$pairs --window=6s" \
    part large_c64 240
  for mode in plain residual; do
    STEPS=serve DURATION=60s SERVE_FLAGS=$q20 SERVE_SHAPES="4096:256" SERVE_MODES=$mode \
      SERVE_NORMBENCH_FLAGS="$pairs --window=20s --warmup=30s" part large_c256_$mode 330
  done
  STEPS=stages STAGES_WORKERS="2 1" part stages 180
fi

# The summary: run_server_h200.sh prints "== TIME normbench NAME" before each point and normbench
# "c=N: window pairs target/baseline: median M of K (LOW-HIGH)" after it.
for log in "$OUT"/small.log "$OUT"/large_*.log; do
  [[ -f $log ]] || continue
  awk '/^== .* normbench / {name = $NF} /window pairs target\/baseline/ {sub(/^ +/, ""); print name ": " $0}' "$log"
done | tee "$OUT/summary.txt"
grep -E "workers:|ratio|requests per launch" "$OUT/stages.log" | tee -a "$OUT/summary.txt"

# One CSV per request kind across its concurrencies, the servers named as in the plots.
for rows in 1 64 4096; do
  for mode in plain residual; do
    files=$(ls "$OUT"/*/normbench_w2_${rows}x4096_${mode}_c*.csv 2>/dev/null)
    [[ -n $files ]] || continue
    awk 'FNR == 1 && NR != 1 {next} {sub(/^target,/, "normd,"); sub(/^baseline,/, "normd-echo,"); print}' $files \
      >"$OUT/${rows}x4096_${mode}.csv"
  done
done
if python3 -c "import matplotlib" 2>/dev/null; then
  for rows in 1 64 4096; do
    csvs=$(ls "$OUT"/${rows}x4096_*.csv 2>/dev/null) || continue
    python3 "$root/bench/load/plot_normbench.py" $csvs -o "$OUT/h200_${rows}x4096.png" \
      --title "normd vs normd-echo on the H200, ${rows}x4096 bf16"
  done
else
  echo "no matplotlib here: plot with bench/load/plot_normbench.py $OUT/*x4096_*.csv elsewhere"
fi
