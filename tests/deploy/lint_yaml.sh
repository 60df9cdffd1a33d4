#!/usr/bin/env bash
# deploy.yamllint: every YAML file of the repository (compose, Prometheus, Grafana provisioning,
# Kubernetes, .yamllint itself) passes yamllint with the committed .yamllint, warnings included.
# Usage: lint_yaml.sh REPOSITORY_ROOT
set -euo pipefail
cd "$1"
if ! command -v yamllint >/dev/null; then
  echo "FAIL: yamllint not found (Debian package yamllint; run scripts/install-deps.sh)" >&2
  exit 1
fi
# The files are named explicitly, so a file yamllint would skip cannot pass unnoticed.
mapfile -t files < <(find . \( -path ./build -o -path ./.git -o -path ./.gpu -o -path ./.cache \) -prune -o \
  -type f \( -name '*.yml' -o -name '*.yaml' -o -name .yamllint \) -print | sort)
if ((${#files[@]} < 8)); then
  echo "FAIL: found only ${#files[@]} YAML files under $1 (expected the deploy/ files): ${files[*]}" >&2
  exit 1
fi
if ! yamllint -c .yamllint --strict -f parsable "${files[@]}"; then
  echo "FAIL: yamllint found the problems above" >&2
  exit 1
fi
echo "ok: yamllint --strict on ${#files[@]} files: ${files[*]}"
