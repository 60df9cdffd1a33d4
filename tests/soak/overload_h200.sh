#!/usr/bin/env bash
# The memory-bound overload runs on the GPU machine, CUDA backend, in about 3 minutes: normd with a
# budget for requests (--max-memory-bytes) and one for pinned staging (--max-pinned-bytes), against
# shortened versions of overload_memory.py's scenarios: 16 and 64 clients of 32 MiB requests (a16,
# a64), 1,000 connections whose streams write and never read (b), and 16 large clients beside
# 1-row clients (c). Logs go to $OUT; the last thing printed is the table.
#
# Needs a bundle of a CUDA build (normd, overload_client) and python3 (standard library only):
#   cmake --preset cuda-h200 && cmake --build build/cuda-h200 --target normd overload_client
# then a folder (.gpu by default) holding the build's bin/ and lib/ with an env.sh that puts them on
# PATH and LD_LIBRARY_PATH; then, on the GPU machine, from the repository root:
#   bash tests/soak/overload_h200.sh            # BUNDLE=.gpu by default
# Flags after the script name go to overload_memory.py (e.g. --seconds=10, or --quota to run normd
# with gRPC's resource quota as well).
# With the bundle in another folder, copy the scripts beside it and point BUNDLE at it:
#   cp tests/soak/overload_h200.sh tests/soak/overload_memory.py tests/soak/normd_run.py <folder>/
#   BUNDLE=<folder> bash <folder>/overload_h200.sh
set -uo pipefail
BUNDLE=${BUNDLE:-.gpu}
OUT=${OUT:-/tmp/normd-overload-h200}
BUDGET_MIB=${BUDGET_MIB:-1024}
PINNED_MIB=${PINNED_MIB:-1024}
source "$BUNDLE/env.sh"
mkdir -p "$OUT"
# overload_memory.py looks for BUILD/server/normd and BUILD/tests/soak/overload_client.
B=$(mktemp -d); mkdir -p "$B/server" "$B/tests/soak"
ln -sf "$(command -v normd)" "$B/server/normd"
ln -sf "$(command -v overload_client)" "$B/tests/soak/overload_client"
{ date -u; nproc; uname -r; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; } \
  > "$OUT/machine.txt" 2>&1
ncpu=$(nproc)
# normd on the first half of the CPUs, the clients on the rest.
half=$((ncpu / 2))
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python3 "$here/overload_memory.py" --build="$B" --backend=cuda --budget-mib="$BUDGET_MIB" \
  --pinned-mib="$PINNED_MIB" --count-from-idle --normd-arg=--max-pinned-bytes=$((PINNED_MIB << 20)) \
  --seconds=8 --scenarios=alone,a16,a64,b,c --small-clients=4 \
  --server-cpus="0-$((half - 1))" --client-cpus="$half-$((ncpu - 1))" --out="$OUT" "$@" \
  2>&1 | tee "$OUT/overload_memory.log"
rc=${PIPESTATUS[0]}
echo "overload_h200: rc=$rc (logs in $OUT)"
cat "$OUT/overload_memory.md" 2>/dev/null
exit "$rc"
