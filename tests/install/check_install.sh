#!/usr/bin/env bash
# Installs normd's build into a scratch prefix, builds tests/install/consumer against it with
# find_package(normd), and runs that program against a real normd (CPU backend) on loopback.
# Usage: check_install.sh BUILD_DIR SOURCE_DIR CXX_COMPILER
set -euo pipefail
build=${1:?} source=${2:?} cxx=${3:?}
work=$(mktemp -d /tmp/normd_install_XXXXXX)
pid=""
trap '[[ -n "$pid" ]] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
# The installed headers must not reach back into the source tree.
if grep -rn '#include "server/' "$work/prefix/include/normd"; then
  echo "check_install: an installed header includes server code" >&2
  exit 1
fi
cmake -S "$source/tests/install/consumer" -B "$work/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release \
  >"$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/consumer" >"$work/build.log" || { cat "$work/build.log"; exit 1; }
port_file="$work/port"
# The installed normd, which must find its libraries from the prefix.
normd="$work/prefix/bin/normd"
"$normd" --backend=cpu --listen=127.0.0.1:0 --metrics-listen= --log-level=info \
  2>"$work/normd.log" &
pid=$!
for _ in $(seq 1 200); do
  port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/normd.log")
  [[ -n "$port" ]] && break
  sleep 0.05
done
[[ -n "${port:-}" ]] || { echo "check_install: normd did not start"; cat "$work/normd.log"; exit 1; }
"$work/consumer/normd_consumer" "127.0.0.1:$port"
