#!/usr/bin/env bash
# normd's CUDA backend end to end on the GPU machine, logs under $OUT (default ./out):
#   integration  the integration suite against normd --backend=cuda           -> integration_cuda.log
#   serve        normbench vs normd-echo (bf16, plain and fused) per worker count in SERVE_WORKERS, with
#                requests per launch and server-side times after each point -> normbench_*.csv, metrics_w*.txt
#                (SERVE_FLAGS: more normd flags, e.g. --max-queue-bytes for 64 x 32 MiB in flight)
#   c1           one request at a time: normd (CPU and CUDA backends) vs the echo, with normd's own times
#                and the GPU's SM clock sampled during each point (clocks_c1_*.csv), and normd's CPU
#                time; C1_VARIANTS picks from cpu, cuda (default flags: busy polling automatic),
#                cuda_nopoll (--busy-poll-us=0), cuda_copies (zero copy off), cuda_poll
#                (--busy-poll-us=BUSY_POLL_US), cuda_zc4 (zero copy up to 4 MiB), cuda_poll_zc4,
#                cuda_copy1 (--copy-threads=1) and cuda_copyspin0 (--copy-spin-us=0)
#   stages       32 MiB requests at concurrency 8: device time per request against the host link
#                bandwidth normd measured, for each worker count in STAGES_WORKERS (default "2 1": the
#                default, then one worker, whose launches' copies never share the link, so that their
#                stage times do not double-count; STAGES_FLAGS: more normd flags); 1-row requests at
#                concurrency 64 with 1 and 2 workers
#   batching     1x4096 at BATCH_LEVELS concurrency for each --company-wait-us in BATCH_WAITS and each
#                --workers-per-gpu in BATCH_WORKERS (BATCH_FLAGS: more normd flags, e.g.
#                --company-min-requests): throughput against the echo, requests per launch
#   echo_ab      two normd-echo binaries side by side: ECHO_A (default: this bundle's) against ECHO_B
#   normd_ab     two normd builds or flag sets, each against the echo, in turn, AB_ROUNDS times: NORMD_A
#                (default: this bundle's normd) with AB_FLAGS_A, NORMD_B (default: the same) with
#                AB_FLAGS_B, at AB_POINTS (rows:concurrency[:residual]), with AB_NORMBENCH_FLAGS
#                (e.g. --connections=8) on every normbench                    -> normbench_ab_*.csv
#   pair         two normd builds or flag sets head to head, normd A as normbench's target and normd B
#                as its baseline (PAIR_NORMD_A, PAIR_NORMD_B: default this bundle's normd; PAIR_FLAGS_A,
#                PAIR_FLAGS_B), at PAIR_POINTS (rows:concurrency[:residual]): the
#                median of the window pairs' ratios says whether B's flags help (PAIR_NORMBENCH_FLAGS:
#                more normbench flags; use --stability=0 and a DURATION of several windows)
#   hold         what answering later and in bursts costs gRPC alone: normd-echo --hold-us=H (answers
#                from one thread, each burst once its oldest call has been held H us) against the plain
#                echo, for each H in HOLD_US, at HOLD_POINTS; then normd against the echo held
#                HOLD_NORMD_US (normd's own server time), if set (HOLD_NORMBENCH_FLAGS as PAIR_...)
#   cpu          where the machine's CPU goes (tests/gpu/cpu_point.py): normbench against one server at a
#                time, the echo and then normd with each flag set of CPU_VARIANTS (';'-separated;
#                "default": none), in turn, CPU_ROUNDS times, at CPU_POINTS (rows:concurrency[:residual]):
#                busy cores, the server's by thread name, CPU microseconds per request (CPU_NORMBENCH_FLAGS:
#                more normbench flags, e.g. --connections=8)
# SERVE_MODES: the serve step's request kinds (default "plain residual").
# SERVE_NORMBENCH_FLAGS: more normbench flags for every serve point (e.g. "--stability=0
# --summary-windows=0" with DURATION=10s: ten window pairs a point, whose median ratio normbench prints).
# CLIENT_CPUS / SERVER_CPUS (taskset lists, e.g. 0-3 and 4-15): pin normbench and the servers of the
# serve, normd_ab, pair and hold steps to their own CPUs, so that neither's threads land on the other's.
# Everything printed goes to stdout; tee it into $OUT.
# Usage (repository root), with .gpu/ a bundle of a cuda-h200 build: a folder holding its bin/ and
# lib/ with an env.sh that puts them on PATH and LD_LIBRARY_PATH:
#   STEPS="integration serve" tests/gpu/run_server_h200.sh
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/.gpu/env.sh"
OUT=${OUT:-$root/out}
mkdir -p "$OUT"
STEPS=${STEPS:-"integration serve"}
DURATION=${DURATION:-3s}
has() { [[ " $STEPS " == *" $1 "* ]]; }
pin_client=(); [[ -n ${CLIENT_CPUS:-} ]] && pin_client=(taskset -c "$CLIENT_CPUS")
pin_server=(); [[ -n ${SERVER_CPUS:-} ]] && pin_server=(taskset -c "$SERVER_CPUS")
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }

stamp start; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
if has integration; then
  stamp integration
  NORMD_BINARY=$(command -v normd) NORMD_TEST_BACKEND=cuda timeout 300 normd_integration_test --gtest_brief=1 \
    2>&1 | tee "$OUT/integration_cuda.log" | tail -30
fi

# parse_point ROWS:CONCURRENCY[:residual]: sets rows, c, mode (plain or residual) and flag (--residual
# or nothing), as the steps' *_POINTS lists give their points.
parse_point() {
  IFS=: read -r rows c mode <<<"$1"
  mode=${mode:-plain}
  flag=""; [[ $mode == residual ]] && flag=--residual
}

wait_serving() {  # port: waits for the "serving" line of a log file
  for _ in $(seq 1 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "server did not start: $(cat "$1")"; return 1
}

scrape() { python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$1/metrics').read().decode())"; }
delta=$root/tests/gpu/metrics_delta.py

# measure_point METRICS_PORT TIMEOUT_S LINES [metrics_delta.py options] -- NORMBENCH_ARGS...
# One measured point: normbench between two scrapes of normd's /metrics, the last LINES lines of its
# report, then what normd did meanwhile (requests per launch, time per stage) from the difference.
measure_point() {
  local port=$1 limit=$2 lines=$3
  shift 3
  local delta_args=()
  while [[ $1 != -- ]]; do delta_args+=("$1"); shift; done
  shift
  scrape "$port" >"$OUT/m_before.txt"
  timeout "$limit" "${pin_client[@]}" normbench "$@" 2>&1 | tail -"$lines"
  scrape "$port" >"$OUT/m_after.txt"
  python3 "$delta" "$OUT/m_before.txt" "$OUT/m_after.txt" "${delta_args[@]}"
}

# compare_point METRICS_PORT LIMIT_S NAME TARGET BASELINE CONCURRENCY ROWS [more normbench flags]
# One point of normd (TARGET) against the echo (BASELINE), 4096-wide bf16 rows, through measure_point;
# normbench's CSV goes to $OUT/normbench_NAME.csv.
compare_point() {
  local port=$1 limit=$2 name=$3 target=$4 baseline=$5 c=$6 rows=$7
  shift 7
  # The caller's flags come after the defaults, so that theirs win (Abseil takes a flag's last value):
  # until 2026-12-03 a --warmup passed here was overridden by the 1 s default that followed it.
  measure_point "$port" "$limit" 5 -- --target="$target" --baseline="$baseline" --concurrency="$c" --rows="$rows" \
    --hidden=4096 --dtype=bf16 --duration="$DURATION" --warmup=1s --csv="$OUT/normbench_$name.csv" "$@"
}

# serve: for each worker count in SERVE_WORKERS (--workers-per-gpu), every shape x concurrency against
# normd-echo; after each point, normd's requests per launch and server-side times from /metrics.
if has serve; then
  "${pin_server[@]}" normd-echo --listen=127.0.0.1:50052 2>"$OUT/echo.log" &
  echo_pid=$!
  wait_serving "$OUT/echo.log" "listening on"
  for workers in ${SERVE_WORKERS:-2}; do
    stamp "serve, --workers-per-gpu=$workers"
    "${pin_server[@]}" normd --backend=cuda --workers-per-gpu="$workers" --listen=127.0.0.1:50051 \
      --metrics-listen=127.0.0.1:9464 \
      ${SERVE_FLAGS:-} 2>"$OUT/normd_w$workers.log" &
    normd_pid=$!
    wait_serving "$OUT/normd_w$workers.log" "normd serving"
    for shape in ${SERVE_SHAPES:-"1:1,8,64,256" "64:1,8,64,256" "4096:1,8,64"}; do
      rows=${shape%%:*}
      for mode in ${SERVE_MODES:-plain residual}; do
        flag=""; [[ $mode == residual ]] && flag=--residual
        IFS=, read -ra levels <<<"${shape#*:}"
        for c in "${levels[@]}"; do
          name="w${workers}_${rows}x4096_${mode}_c$c"
          stamp "normbench $name"
          compare_point 9464 200 "$name" 127.0.0.1:50051 127.0.0.1:50052 "$c" "$rows" $flag \
            ${SERVE_NORMBENCH_FLAGS:-}
        done
      done
    done
    scrape 9464 >"$OUT/metrics_w$workers.txt"
    kill -TERM "$normd_pid"; wait "$normd_pid"; echo "normd exit $?"
  done
  kill -TERM "$echo_pid"
fi

# c1: one 1x4096 bf16 request at a time, normd on the CPU and on the CUDA backend against the echo, with
# normd's own account of each request: where a lone request's extra time goes.
if has c1; then
  normd-echo --listen=127.0.0.1:50072 2>"$OUT/echo_c1.log" &
  echo_pid=$!
  wait_serving "$OUT/echo_c1.log" "listening on"
  # cuda_copies: the CUDA backend with the zero-copy path turned off (every launch copies up and down);
  # cuda_poll: the CUDA backend with busy polling for BUSY_POLL_US (worker.h); cuda_nopoll: without.
  for variant in ${C1_VARIANTS:-cpu cuda cuda_copies}; do
    case $variant in
      cpu) flags="--backend=cpu" ;;
      cuda) flags="--backend=cuda" ;;
      cuda_nopoll) flags="--backend=cuda --busy-poll-us=0" ;;
      cuda_copies) flags="--backend=cuda --zero-copy-max-bytes=0" ;;
      cuda_poll) flags="--backend=cuda --busy-poll-us=${BUSY_POLL_US:-1000}" ;;
      cuda_zc4) flags="--backend=cuda --zero-copy-max-bytes=4194304" ;;
      cuda_poll_zc4) flags="--backend=cuda --busy-poll-us=${BUSY_POLL_US:-1000} --zero-copy-max-bytes=4194304" ;;
      cuda_copy1) flags="--backend=cuda --copy-threads=1" ;;
      cuda_copyspin0) flags="--backend=cuda --copy-spin-us=0" ;;
      *) echo "unknown c1 variant $variant"; continue ;;
    esac
    normd $flags --listen=127.0.0.1:50071 --metrics-listen=127.0.0.1:9471 2>"$OUT/normd_c1_$variant.log" &
    pid=$!
    wait_serving "$OUT/normd_c1_$variant.log" "normd serving"
    for rows in 1 64; do
      stamp "c1 $variant ${rows}x4096"
      # The SM clock while one request at a time runs: a 1-row kernel's time scales with it.
      nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw --format=csv,noheader,nounits -lms 100 \
        >"$OUT/clocks_c1_${variant}_$rows.csv" &
      smi_pid=$!
      cpu_before=$(awk '{print $14 + $15}' /proc/$pid/stat); wall_before=$(date +%s.%N)
      measure_point 9471 60 4 -- --target=127.0.0.1:50071 --baseline=127.0.0.1:50072 --concurrency=1 \
        --rows=$rows --hidden=4096 --dtype=bf16 --duration="$DURATION" --warmup=1s
      cpu_after=$(awk '{print $14 + $15}' /proc/$pid/stat); wall_after=$(date +%s.%N)
      # normbench measures normd and the echo in turn, so normd is busy about half of this wall time.
      awk -v c=$((cpu_after - cpu_before)) -v w0="$wall_before" -v w1="$wall_after" -v hz="$(getconf CLK_TCK)" \
        'BEGIN {printf "normd CPU time over the point: %.2f s in %.1f s of wall time\n", c / hz, w1 - w0}'
      kill $smi_pid; wait $smi_pid 2>/dev/null
      sort -n "$OUT/clocks_c1_${variant}_$rows.csv" | awk -F, '{c[NR]=$1} END {if (NR) printf \
        "SM clock during the point: min %d, median %d, max %d MHz (%d samples)\n", c[1], c[int((NR+1)/2)], c[NR], NR}'
    done
    kill -TERM $pid; wait $pid
  done
  kill -TERM "$echo_pid"
fi

# stages: 32 MiB requests at concurrency 8 (device time per request against the host link bandwidth
# normd measured at start-up), then 1-row requests at concurrency 64 for each worker count.
if has stages; then
  for workers in ${STAGES_WORKERS:-2 1}; do
    stamp "stages, --workers-per-gpu=$workers"
    normd --backend=cuda --workers-per-gpu="$workers" ${STAGES_FLAGS:-} --listen=127.0.0.1:50061 \
      --metrics-listen=127.0.0.1:9465 2>"$OUT/normd_stages_w$workers.log" &
    pid=$!
    wait_serving "$OUT/normd_stages_w$workers.log" "normd serving"
    grep "GPU 0" "$OUT/normd_stages_w$workers.log"
    for mode in plain residual; do
      flag=""; bytes=$((2 * 4096 * 4096 * 2))
      [[ $mode == residual ]] && flag=--residual && bytes=$((2 * bytes))
      echo "4096x4096 bf16 $mode at c=8, $workers workers:"
      measure_point 9465 100 3 --bytes-per-request=$bytes -- --target=127.0.0.1:50061 --concurrency=8 \
        --rows=4096 --hidden=4096 --dtype=bf16 $flag --duration=6s --warmup=1s
    done
    kill -TERM $pid; wait $pid
  done
  for workers in 1 2; do
    normd --backend=cuda --workers-per-gpu=$workers --listen=127.0.0.1:50062 --metrics-listen=127.0.0.1:9466 \
      2>"$OUT/normd_w${workers}_c64.log" &
    pid=$!
    wait_serving "$OUT/normd_w${workers}_c64.log" "normd serving"
    stamp "--workers-per-gpu=$workers, 1x4096 at c=64"
    measure_point 9466 60 3 -- --target=127.0.0.1:50062 --concurrency=64 --rows=1 --hidden=4096 --dtype=bf16 \
      --duration=4s
    kill -TERM $pid; wait $pid
  done
fi
# batching: closed-loop 1-row clients with and without waiting for company (BatchLimits::company_wait).
if has batching; then
  normd-echo --listen=127.0.0.1:50082 2>"$OUT/echo_batching.log" &
  echo_pid=$!
  wait_serving "$OUT/echo_batching.log" "listening on"
  for workers in ${BATCH_WORKERS:-1 2}; do
    for wait_us in ${BATCH_WAITS:-0 200 500}; do
      normd --backend=cuda --workers-per-gpu="$workers" --company-wait-us="$wait_us" ${BATCH_FLAGS:-} \
        --listen=127.0.0.1:50081 \
        --metrics-listen=127.0.0.1:9481 2>"$OUT/normd_batching_w${workers}_cw$wait_us.log" &
      pid=$!
      wait_serving "$OUT/normd_batching_w${workers}_cw$wait_us.log" "normd serving"
      IFS=, read -ra levels <<<"${BATCH_LEVELS:-1,8,64,256}"
      for c in "${levels[@]}"; do
        stamp "batching --workers-per-gpu=$workers --company-wait-us=$wait_us ${BATCH_FLAGS:-} 1x4096 c=$c"
        measure_point 9481 60 3 -- --target=127.0.0.1:50081 --baseline=127.0.0.1:50082 --concurrency="$c" \
          --rows=1 --hidden=4096 --dtype=bf16 --duration="$DURATION" --warmup=1s \
          --csv="$OUT/normbench_batching_w${workers}_cw${wait_us}_c$c.csv"
      done
      kill -TERM $pid; wait $pid
    done
  done
  kill -TERM "$echo_pid"
fi

# echo_ab: two echo builds side by side (what a process-wide setting does to the transport ceiling).
if has echo_ab && [[ -x "${ECHO_B:-}" ]]; then
  "${ECHO_A:-normd-echo}" --listen=127.0.0.1:50092 2>"$OUT/echo_a.log" &
  a_pid=$!
  "$ECHO_B" --listen=127.0.0.1:50093 2>"$OUT/echo_b.log" &
  b_pid=$!
  wait_serving "$OUT/echo_a.log" "listening on"
  wait_serving "$OUT/echo_b.log" "listening on"
  stamp "echo_ab: ${ECHO_A:-normd-echo} (target) against $ECHO_B (baseline)"
  timeout 60 normbench --target=127.0.0.1:50092 --baseline=127.0.0.1:50093 --concurrency=1,8,64,256 --rows=1 \
    --hidden=4096 --dtype=bf16 --duration="$DURATION" --warmup=1s 2>&1 | grep -E "^target|^baseline|throughput"
  kill -TERM $a_pid $b_pid
fi
# normd_ab: what one change does to normd's cost over the echo, the two sides measured in turn against
# the same echo process so that drift of the machine shows up in both.
if has normd_ab; then
  "${pin_server[@]}" normd-echo --listen=127.0.0.1:50102 2>"$OUT/echo_ab.log" &
  echo_pid=$!
  wait_serving "$OUT/echo_ab.log" "listening on"
  for round in $(seq 1 "${AB_ROUNDS:-2}"); do
    for side in a b; do
      if [[ $side == a ]]; then bin=${NORMD_A:-normd}; flags=${AB_FLAGS_A:-}; else bin=${NORMD_B:-normd}; flags=${AB_FLAGS_B:-}; fi
      "${pin_server[@]}" "$bin" --backend=cuda $flags --listen=127.0.0.1:50101 --metrics-listen=127.0.0.1:9501 \
        2>"$OUT/normd_ab_${side}_r$round.log" &
      pid=$!
      wait_serving "$OUT/normd_ab_${side}_r$round.log" "normd serving"
      for point in ${AB_POINTS:-"64:1" "64:1:residual" "64:8" "1:1"}; do
        parse_point "$point"
        name="ab_${side}_r${round}_${rows}x4096_${mode}_c$c"
        stamp "normd_ab $name: $bin $flags"
        compare_point 9501 60 "$name" 127.0.0.1:50101 127.0.0.1:50102 "$c" "$rows" $flag ${AB_NORMBENCH_FLAGS:-}
      done
      kill -TERM $pid; wait $pid
    done
  done
  kill -TERM "$echo_pid"
fi
# pair: normd with PAIR_FLAGS_A (normbench's target) against normd with PAIR_FLAGS_B (its baseline),
# both serving at once, window by window; /metrics deltas are A's.
if has pair; then
  "${pin_server[@]}" "${PAIR_NORMD_B:-normd}" --backend=cuda ${PAIR_FLAGS_B:-} --listen=127.0.0.1:50132 --metrics-listen=127.0.0.1:9532 \
    2>"$OUT/normd_pair_b.log" &
  pid_b=$!
  "${pin_server[@]}" "${PAIR_NORMD_A:-normd}" --backend=cuda ${PAIR_FLAGS_A:-} --listen=127.0.0.1:50131 --metrics-listen=127.0.0.1:9531 \
    2>"$OUT/normd_pair_a.log" &
  pid_a=$!
  wait_serving "$OUT/normd_pair_b.log" "normd serving"
  wait_serving "$OUT/normd_pair_a.log" "normd serving"
  for point in ${PAIR_POINTS:-"1:8" "1:64"}; do
    parse_point "$point"
    name="pair_${rows}x4096_${mode}_c$c"
    stamp "pair $name: a ${PAIR_NORMD_A:-normd} '${PAIR_FLAGS_A:-}' (target) vs b ${PAIR_NORMD_B:-normd} '${PAIR_FLAGS_B:-}' (baseline)"
    compare_point 9531 120 "$name" 127.0.0.1:50131 127.0.0.1:50132 "$c" "$rows" $flag ${PAIR_NORMBENCH_FLAGS:-}
  done
  scrape 9531 >"$OUT/metrics_pair_a.txt"; scrape 9532 >"$OUT/metrics_pair_b.txt"
  kill -TERM "$pid_a" "$pid_b"; wait "$pid_a" "$pid_b"
fi
# hold: the echo answering late, from its own thread, against the echo answering in gRPC's handler.
if has hold; then
  "${pin_server[@]}" normd-echo --listen=127.0.0.1:50142 2>"$OUT/echo_hold0.log" &
  echo_pid=$!
  wait_serving "$OUT/echo_hold0.log" "listening on"
  hold_point() {  # TARGET_PORT NAME: the target against the plain echo or, with a 3rd argument, that port
    local port=$1 name=$2 base=${3:-50142}
    for point in ${HOLD_POINTS:-"1:64" "1:256"}; do
      parse_point "$point"
      stamp "hold $name ${rows}x4096 $mode c=$c"
      timeout 120 "${pin_client[@]}" normbench --target=127.0.0.1:$port --baseline=127.0.0.1:$base --concurrency="$c" \
        --rows="$rows" --hidden=4096 --dtype=bf16 $flag --duration="$DURATION" --warmup=1s ${HOLD_NORMBENCH_FLAGS:-} \
        --csv="$OUT/normbench_hold_${name}_${rows}x4096_${mode}_c$c.csv" 2>&1 | tail -5
    done
  }
  for hold in ${HOLD_US:-1 200 450}; do
    "${pin_server[@]}" normd-echo --hold-us="$hold" --listen=127.0.0.1:50143 2>"$OUT/echo_hold$hold.log" &
    pid=$!
    wait_serving "$OUT/echo_hold$hold.log" "listening on"
    hold_point 50143 "echo_hold${hold}_vs_echo"
    kill -TERM $pid; wait $pid
  done
  if [[ -n ${HOLD_NORMD_US:-} ]]; then
    "${pin_server[@]}" normd-echo --hold-us="$HOLD_NORMD_US" --listen=127.0.0.1:50143 2>"$OUT/echo_hold_n.log" &
    pid=$!
    "${pin_server[@]}" normd --backend=cuda --listen=127.0.0.1:50141 --metrics-listen=127.0.0.1:9541 \
      2>"$OUT/normd_hold.log" &
    normd_pid=$!
    wait_serving "$OUT/echo_hold_n.log" "listening on"
    wait_serving "$OUT/normd_hold.log" "normd serving"
    hold_point 50141 "normd_vs_echo_hold$HOLD_NORMD_US" 50143
    kill -TERM $pid $normd_pid; wait $pid $normd_pid
  fi
  kill -TERM "$echo_pid"
fi
# cpu: the servers of one point measured one after another, each alone, with the machine's and the
# server's CPU time over the run (cpu_point.py), and normd's launches from /metrics.
if has cpu; then
  normd-echo --listen=127.0.0.1:50112 2>"$OUT/echo_cpu.log" &
  echo_pid=$!
  wait_serving "$OUT/echo_cpu.log" "listening on"
  IFS=';' read -ra variants <<<"${CPU_VARIANTS:-default}"
  pids=()
  for i in "${!variants[@]}"; do
    flags=${variants[$i]}; [[ $flags == default ]] && flags=""
    normd --backend=cuda $flags --listen=127.0.0.1:$((50120 + i)) --metrics-listen=127.0.0.1:$((9520 + i)) \
      2>"$OUT/normd_cpu_$i.log" &
    pids+=($!)
    wait_serving "$OUT/normd_cpu_$i.log" "normd serving"
  done
  for round in $(seq 1 "${CPU_ROUNDS:-1}"); do
    for point in ${CPU_POINTS:-"1:64" "1:256" "64:64" "1:1"}; do
      parse_point "$point"
      load=(--concurrency="$c" --rows="$rows" --hidden=4096 --dtype=bf16 $flag --duration="$DURATION" --warmup=1s
            ${CPU_NORMBENCH_FLAGS:-})
      stamp "cpu r$round ${rows}x4096 $mode c=$c: echo"
      python3 "$root/tests/gpu/cpu_point.py" --pid "$echo_pid" --label "r$round ${rows}x4096 $mode c=$c echo" \
        -- normbench --target=127.0.0.1:50112 "${load[@]}"
      for i in "${!variants[@]}"; do
        stamp "cpu r$round ${rows}x4096 $mode c=$c: normd ${variants[$i]}"
        scrape $((9520 + i)) >"$OUT/m_before.txt"
        python3 "$root/tests/gpu/cpu_point.py" --pid "${pids[$i]}" \
          --label "r$round ${rows}x4096 $mode c=$c normd ${variants[$i]}" \
          -- normbench --target=127.0.0.1:$((50120 + i)) "${load[@]}"
        scrape $((9520 + i)) >"$OUT/m_after.txt"
        python3 "$delta" "$OUT/m_before.txt" "$OUT/m_after.txt"
      done
    done
  done
  kill -TERM "$echo_pid" "${pids[@]}"
fi
stamp done
