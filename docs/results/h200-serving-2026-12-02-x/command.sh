#!/usr/bin/env bash
# Second nvidia-h200 call of the fourteenth session (2026-12-02). Logs under $OUT/x.tgz.
# .gpu: normd = ed6f4e2 (responses' 32 MiB tensors in LargeBufferPool's reused buffers instead of
# built by protobuf); normd-prev = HEAD d734c10 (before it); normd-echo, normbench, the integration test.
#  1. The integration suite against normd --backend=cuda.
#  2. Head to head (`pair`), normd (target) against normd-prev (baseline), 4096x4096 bf16 (32 MiB),
#     plain at c=1 and 64, with a residual at c=64, 4 s window pairs (three a point).
#  3. normd against the echo at 4096x4096, c=64, in 6 s window pairs (three a point): a request takes
#     ~2 s there, so call w's 1 s windows timed the ramp.
#  4. The 1-row c=1 points against the echo again (ten 1 s window pairs each).
set -uo pipefail
source .gpu/env.sh
R=/tmp/x; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/x.tgz" -C /tmp x; }
run=tests/gpu/run_server_h200.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/integration STEPS=integration timeout 110 $run > "$R/integration.log" 2>&1
echo "integration rc=$?"; pack
OUT=$R/pair32 STEPS=pair DURATION=12s PAIR_NORMD_B=normd-prev PAIR_FLAGS_A=--max-queue-bytes=4294967296 \
  PAIR_FLAGS_B=--max-queue-bytes=4294967296 PAIR_POINTS="4096:1 4096:64 4096:64:residual" \
  PAIR_NORMBENCH_FLAGS="--stability=0 --summary-windows=0 --window=4s" timeout 130 $run > "$R/pair32.log" 2>&1
echo "pair32 rc=$?"; pack
OUT=$R/serve32 STEPS=serve DURATION=18s SERVE_FLAGS=--max-queue-bytes=4294967296 \
  SERVE_SHAPES="4096:64" SERVE_NORMBENCH_FLAGS="--stability=0 --summary-windows=0 --window=6s" \
  timeout 130 $run > "$R/serve32.log" 2>&1
echo "serve32 rc=$?"; pack
OUT=$R/serve1 STEPS=serve DURATION=10s SERVE_SHAPES="1:1" \
  SERVE_NORMBENCH_FLAGS="--stability=0 --summary-windows=0" timeout 60 $run > "$R/serve1.log" 2>&1
echo "serve1 rc=$?"; pack
grep -E "tests? (passed|failed)|FAILED|PASSED" "$R/integration/integration_cuda.log" | tail -3
echo "== pair32"; grep -E "^== .*pair |^(target|baseline) |target/baseline|requests per launch|per launch:" "$R/pair32.log"
for f in serve32 serve1; do
  echo "== $f"; grep -E "^== .*normbench|^(target|baseline) |target/baseline|requests per launch|per launch:" "$R/$f.log"
done
grep -h "response_pool" "$R"/serve32/metrics_w2.txt | grep -v "^#"
