#!/usr/bin/env bash
# Fails when a tracked C++ or CUDA source differs from what clang-format makes of it (.clang-format),
# listing each such file. clang-format 14 is the pinned formatter: other versions format a few
# constructs differently, so the check uses clang-format-14 where it is installed.
# Usage: check_format.sh REPO_ROOT
set -euo pipefail
cd "${1:?usage: check_format.sh REPO_ROOT}"
formatter=$(command -v clang-format-14 || command -v clang-format || true)
if [[ -z "$formatter" ]]; then
  echo "check_format: no clang-format found (scripts/install-deps.sh installs clang-format-14)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
bad=()
for f in "${files[@]}"; do
  "$formatter" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  printf 'check_format: not formatted (run: %s -i FILE):\n' "$formatter"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "check_format: ${#files[@]} files formatted as .clang-format says ($("$formatter" --version))"
