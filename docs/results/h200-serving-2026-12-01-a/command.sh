#!/usr/bin/env bash
# First nvidia-h200 call of 2026-12-01 (sixth session). Logs under $OUT/a.tgz.
# (1) the integration suite against normd --backend=cuda (the copy pool in the CUDA executor);
# (2) normd_ab: --copy-threads=1 (the launch's copies on one thread, as before) against the default
#     (automatic: 4 threads on this machine, polling as long as the worker's busy poll), same binary,
#     each against the same echo, in turn, two rounds of 2 s;
# (3) normd_ab: --copy-spin-us=0 (copy threads sleep between launches) against the default;
# (4) batching: 1x4096 at c=8, 64, 256 with one and two workers, waiting for company only after a
#     launch of at least 12 requests (--company-min-requests=12), against the defaults;
# (5) issue 3's probe: the cluster kernel forced at many rows (normd_kernel_bench --cluster).
set -uo pipefail
source .gpu/env.sh
R=/tmp/a; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/a.tgz" -C /tmp a; }
run=tests/gpu/run_server_h200.sh
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv; nproc; lscpu | head -20; } > "$R/machine.txt"
timeout 120 normd_server_unit_test --gtest_filter='CopyPool*' > "$R/copy_pool_unit.log" 2>&1
echo "copy pool unit tests rc=$?"
OUT=$R/integration STEPS=integration timeout 300 $run > "$R/integration.log" 2>&1
echo "integration rc=$?"; pack
OUT=$R/copies STEPS=normd_ab DURATION=2s AB_ROUNDS=2 AB_FLAGS_A=--copy-threads=1 \
  AB_POINTS="64:1 64:1:residual 1024:1 4096:1 64:64 1:64" timeout 260 $run > "$R/copies.log" 2>&1
echo "copies rc=$?"; pack
OUT=$R/spin STEPS=normd_ab DURATION=2s AB_ROUNDS=2 AB_FLAGS_A=--copy-spin-us=0 AB_POINTS="64:1 64:64" \
  timeout 100 $run > "$R/spin.log" 2>&1
echo "spin rc=$?"; pack
for cfg in "1 0 2" "1 500 12" "2 500 12" "2 1000 12"; do
  read -r w cw m <<<"$cfg"
  OUT=$R/batch_w${w}_cw${cw}_m$m STEPS=batching BATCH_WORKERS=$w BATCH_WAITS=$cw \
    BATCH_FLAGS=--company-min-requests=$m BATCH_LEVELS=8,64,256 DURATION=2s timeout 70 $run \
    > "$R/batch_w${w}_cw${cw}_m$m.log" 2>&1
  echo "batching $cfg rc=$?"
done
pack
timeout 150 normd_kernel_bench --csv --dtypes bf16 --modes plain,fused --rows 1024,4096,16384,65536 \
  --hidden 4096,7168,8192,16384 --cluster 0,2,4,8 > "$R/cluster_probe.csv" 2> "$R/cluster_probe.err"
echo "cluster probe rc=$?"; pack
grep -E "tests? (passed|failed)|FAILED|PASSED" "$R/integration.log" | tail -5
grep -E "^== .*normd_ab|throughput|p50" "$R/copies.log" | head -80
