#!/usr/bin/env bash
# Built from commit e7660ff (the v13 library, unchanged). First nvidia-h200 call of the twenty-second
# session (2026-12-03): issue 3's >= 4.2 TB/s grid (rows 16384 and 65536, H 1024-16384 but 7168,
# every dtype and mode) through compare_kernels.py with the new "copy" column (torch's device copy
# of the same bytes under the same do_bench method), then the bf16 16384-row points again with L2
# emptied by reading instead of zeroing (--flush read, and --flush zero as this loop's control).
set -uo pipefail
source .gpu/env.sh
export PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p "$R"
pack() { tar -C "$OUT" -czf "$OUT/ceiling.tgz" r; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$R/gpu.txt"
python3 -c "import inspect, triton.testing as t; print(inspect.getsource(t.do_bench))" > "$R/do_bench_source.txt" 2>&1
C="python3 bench/cuda/compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so"
timeout 400 $C --rows 16384,65536 --hidden 1024,3000,4096,5120,8192,16384 --budget-s 370 \
  --csv "$R/grid.csv" > "$R/grid.log" 2>&1
echo "grid rc=$?"; tail -3 "$R/grid.log"; pack
for flush in read zero; do
  timeout 70 $C --dtypes bf16 --rows 16384 --hidden 1024,4096,8192,16384 --anchors compile \
    --flush $flush --budget-s 50 --csv "$R/flush_$flush.csv" > "$R/flush_$flush.log" 2>&1
  echo "flush $flush rc=$?"; tail -2 "$R/flush_$flush.log"
done
pack && rm -rf "$R"
