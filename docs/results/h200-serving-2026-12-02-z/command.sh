#!/usr/bin/env bash
# First nvidia-h200 call of the sixteenth session (2026-12-02). Logs under $OUT/z.tgz.
# .gpu: normd, normd-echo, normbench, the integration test of this commit (the inline weight left in
# the received slices, d54e11b, and carried as TensorBytes like the input); normd-prev = the build of
# call y (85f66ba, the weight still copied into the skeleton and then by protobuf's parse).
#  1. The integration suite against normd --backend=cuda.
#  2. Issue 8's grid, 1x4096 and 64x4096 bf16 (plain and with a residual, c = 1, 8, 64, 256), against
#     the echo in one run, six 1 s window pairs a point (the 4096-row points are call zb's).
#  3. The weight change head to head (`pair`), both orders: normd against normd-prev at 1x4096 c=1 and
#     c=64 over one connection, and c=64 over eight, six 1 s window pairs a point.
set -uo pipefail
source .gpu/env.sh
R=/tmp/z; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/z.tgz" -C /tmp z; }
run=tests/gpu/run_server_h200.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; } > "$R/machine.txt"
OUT=$R/integration STEPS=integration timeout 110 $run > "$R/integration.log" 2>&1
echo "integration rc=$?"; pack
OUT=$R/serve STEPS=serve DURATION=6s SERVE_SHAPES="1:1,8,64,256 64:1,8,64,256" \
  SERVE_NORMBENCH_FLAGS="--stability=0 --summary-windows=0" timeout 330 $run > "$R/serve.log" 2>&1
echo "serve rc=$?"; pack
for order in new_prev prev_new; do
  a=normd; b=normd-prev; [[ $order == prev_new ]] && a=normd-prev && b=normd
  OUT=$R/pair1_$order STEPS=pair DURATION=6s PAIR_NORMD_A=$a PAIR_NORMD_B=$b PAIR_POINTS="1:1 1:64" \
    PAIR_NORMBENCH_FLAGS="--stability=0 --summary-windows=0" timeout 45 $run > "$R/pair1_$order.log" 2>&1
  echo "pair1 $order rc=$?"
  OUT=$R/pair8_$order STEPS=pair DURATION=6s PAIR_NORMD_A=$a PAIR_NORMD_B=$b PAIR_POINTS="1:64" \
    PAIR_NORMBENCH_FLAGS="--connections=8 --stability=0 --summary-windows=0" timeout 25 $run \
    > "$R/pair8_$order.log" 2>&1
  echo "pair8 $order rc=$?"; pack
done
grep -E "tests? (passed|failed)|FAILED|PASSED" "$R/integration/integration_cuda.log" | tail -3
echo "== serve"; grep -E "^== .*normbench|target/baseline|requests per launch" "$R/serve.log"
for f in pair1_new_prev pair8_new_prev pair1_prev_new pair8_prev_new; do
  echo "== $f"; grep -E "^== .*pair |target/baseline" "$R/$f.log"
done
