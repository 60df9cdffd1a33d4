#!/usr/bin/env bash
# deploy.promtool_config: `promtool check config` (Debian's prometheus package) accepts the
# Prometheus configuration of the compose stack.
# Usage: check_prometheus_config.sh PROMETHEUS_YML
set -euo pipefail
if ! command -v promtool >/dev/null; then
  echo "FAIL: promtool not found (Debian package prometheus; run scripts/install-deps.sh)" >&2
  exit 1
fi
if ! promtool check config "$1"; then
  echo "FAIL: promtool check config $1" >&2
  exit 1
fi
