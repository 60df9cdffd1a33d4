#!/usr/bin/env bash
# Runs every fuzz target for a bounded time from the committed seed corpus and prints the executions.
#   tests/fuzz/run_fuzzers.sh [BUILD_DIR] [SECONDS_EACH]     (defaults: build/fuzz, 60)
# Exits non-zero if any target finds a crash, a sanitizer report or a failed check; the reproducer is
# left in the work directory it prints (libFuzzer's crash-* file): add it to the corpus and make it a
# regression test. The committed corpus is not modified (new inputs go to a scratch copy).
set -euo pipefail
build=${1:-build/fuzz}
seconds=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/normd-fuzz.XXXXXX")
total=0
status=0
for target in fuzz_normalize_request fuzz_staging_packer fuzz_dtype_conversions; do
  cp -r "$here/corpus/$target" "$work/$target"
  log="$work/$target.log"
  if (cd "$work" && "$OLDPWD/$build/tests/fuzz/$target" -max_total_time="$seconds" -print_final_stats=1 \
        -rss_limit_mb=4096 -timeout=30 "$work/$target" >"$log" 2>&1); then
    result=ok
  else
    result=FAILED
    status=1
    tail -40 "$log"
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  echo "fuzz: $target: ${runs:-0} executions in ${seconds}s, corpus $(ls "$work/$target" | wc -l) inputs: $result"
  total=$((total + ${runs:-0}))
done
echo "fuzz: $total executions in total; work directory $work"
exit $status
