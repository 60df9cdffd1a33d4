#!/usr/bin/env bash
# Third nvidia-h200 call of the twenty-first session (2026-12-03): A/B of the push kernel's
# exchange. Library A: commit ef80f58 (a block reduction into warp 0, then lanes < C push the CTA's
# sum). Library B: ef80f58 with library_b.patch (each warp pushes its own sum: no block barrier
# before the exchange; C * W slots summed by a warp's lanes and a butterfly). Correctness of B
# first (the push tests, racecheck over them), then A and B alternating over few-row shapes.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/warps.tgz" r; }
A=$PWD/.gpu/lib_a
{ LD_LIBRARY_PATH=$A:$LD_LIBRARY_PATH ldd "$(command -v normd_kernel_bench)" | grep normd_cuda
  ldd "$(command -v normd_kernel_bench)" | grep normd_cuda; md5sum .gpu/lib/libnormd_cuda* "$A"/*; } > "$R/libs.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
timeout 150 stdbuf -oL -eL normd_gpu_tests --gtest_filter='RmsNormCudaSplitPush.*:RmsNormCudaArguments.*' \
  > "$R/push_tests.log" 2>&1
echo "push tests rc=$?"; grep -a 'PASSED\|FAILED\|Failure' "$R/push_tests.log" | head -20
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 normd_gpu_tests \
  --gtest_filter='RmsNormCudaSplitPush.*' > "$R/racecheck.log" 2>&1
echo "racecheck rc=$?"; grep -a 'RACECHECK SUMMARY\|PASSED\|FAILED' "$R/racecheck.log"
pack
grid() { timeout 60 normd_kernel_bench --csv --dtypes bf16,fp32 --rows 1,8,16,64,128 \
  --hidden 4096,7168,16384,65536 --modes plain,fused; }
for round in 1 2 3; do
  LD_LIBRARY_PATH=$A:$LD_LIBRARY_PATH grid > "$R/grid_a$round.csv" 2>&1; echo "grid a$round rc=$?"
  grid > "$R/grid_b$round.csv" 2>&1; echo "grid b$round rc=$?"
  pack
done
pack && rm -rf "$R"
