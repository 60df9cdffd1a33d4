#!/usr/bin/env bash
# deploy.compose_config: Debian's docker-compose (1.29) accepts each way the stack is brought up, and
# the merged configurations pass check_compose.py (GPU reservations, the CPU variant, mounts).
# Usage: check_compose.sh DEPLOY_DIR [PYTHON3]
set -euo pipefail
deploy_dir=$1
python=${2:-python3}
if ! command -v docker-compose >/dev/null; then
  echo "FAIL: docker-compose not found (Debian package docker-compose; run scripts/install-deps.sh)" >&2
  exit 1
fi
here=$(cd "$(dirname "$0")" && pwd)
cd "$deploy_dir"
variants=(
  "-f docker-compose.yml"
  "-f docker-compose.yml --profile dcgm"
  "-f docker-compose.yml -f docker-compose.cpu.yml"
)
for args in "${variants[@]}"; do
  # Word splitting of $args is intended: each variant is a list of options.
  # shellcheck disable=SC2086
  if ! docker-compose $args config -q; then
    echo "FAIL: docker-compose $args config -q (in $deploy_dir)" >&2
    exit 1
  fi
  echo "ok: docker-compose $args config -q"
done
exec "$python" "$here/check_compose.py" "$deploy_dir"
