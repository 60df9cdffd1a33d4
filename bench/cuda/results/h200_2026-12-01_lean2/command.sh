#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, eighth session), lean2: the lean two-pass kernel's second pass
# with two fp32 vectors per thread per iteration, both loaded before either is used, against one
# (v6). An experiment build: NORMD_EXP_LEAN2 set picks the two-vector variant (fp32 only). (1) the
# lean kernel's tests with it; (2) the kernel bench, fp32 plain rows of H 4096-16384 and fused rows
# of H 3000, the automatic choice and the lean kernel forced, one vector / two / one / two in turn.
# Logs under $OUT/lean2.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/lean2; rm -rf "$R"; mkdir -p "$R"
pack() { tar czf "$OUT/lean2.tgz" -C /tmp lean2; }
NORMD_EXP_LEAN2=1 timeout 120 normd_gpu_tests --gtest_brief=1 --gtest_filter='RmsNormCudaLean.*' \
  > "$R/lean_tests.log" 2>&1
echo "tests rc=$?"; tail -2 "$R/lean_tests.log"; pack
bench() {
  timeout 60 normd_kernel_bench --csv --dtypes fp32 --modes plain --hidden 4096,7168,8192,16384 \
    --rows 1024,4096,16384,65536 --lean auto,on
  timeout 30 normd_kernel_bench --csv --dtypes fp32 --modes fused --hidden 3000 \
    --rows 4096,16384,65536 --lean auto,on
}
for round in 1 2; do
  bench > "$R/one_$round.csv" 2>&1; echo "one $round rc=$?"
  NORMD_EXP_LEAN2=1 bench > "$R/two_$round.csv" 2>&1; echo "two $round rc=$?"
  pack
done
