#!/usr/bin/env bash
# Second nvidia-h200 call of the twenty-first session (2026-12-03): A/B of storing residual_out
# = round(h) in the first pass, before the reduction, instead of beside the output at the end.
# Library A: commit 3e5f2a5 as built for call c16. Library B: the same with library_b.patch (push
# kernel: the store before the exchange; reload kernel: the store in the first pass, an experiment
# that is not safe in place). The benchmark binary is B's build (the public header is unchanged);
# the library is picked by LD_LIBRARY_PATH, A and B alternating.
source .gpu/env.sh
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/early.tgz" r; }
A=$PWD/.gpu/lib_a
{ LD_LIBRARY_PATH=$A:$LD_LIBRARY_PATH ldd "$(command -v normd_kernel_bench)" | grep normd_cuda
  ldd "$(command -v normd_kernel_bench)" | grep normd_cuda; md5sum .gpu/lib/libnormd_cuda* "$A"/*; } > "$R/libs.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
small() { timeout 30 normd_kernel_bench --csv --dtypes bf16,fp32 --rows 1,8 --hidden 4096,7168,16384 \
  --modes fused --push auto; }
large() { timeout 110 normd_kernel_bench --csv --dtypes bf16,fp16 --rows 4096,16384,65536 \
  --hidden 3000,4096,5120,7168,8192 --modes fused; }
for round in 1 2 3; do
  LD_LIBRARY_PATH=$A:$LD_LIBRARY_PATH small > "$R/small_a$round.csv" 2>&1; echo "small a$round rc=$?"
  small > "$R/small_b$round.csv" 2>&1; echo "small b$round rc=$?"
done
pack
SECONDS=0
for round in 1 2; do
  LD_LIBRARY_PATH=$A:$LD_LIBRARY_PATH large > "$R/large_a$round.csv" 2>&1; echo "large a$round rc=$? ${SECONDS}s"
  pack
  large > "$R/large_b$round.csv" 2>&1; echo "large b$round rc=$? ${SECONDS}s"
  pack
  if [ $SECONDS -gt 230 ]; then break; fi
done
pack && rm -rf "$R"
