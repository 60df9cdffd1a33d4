#!/usr/bin/env bash
# Installs what normd needs to build and test, from the distribution's packages (Debian 12 or
# Ubuntu 24.04, as root). Installs only what is missing, so a second run costs a second.
# CUDA is optional: when nvcc is in the toolkit's standard location the CUDA backend is built too.
#
#   install-deps.sh               what building and testing everything needs
#   install-deps.sh --build-only  what building normd and normctl needs (the container image)
set -euo pipefail
build_only=0
[[ "${1:-}" == --build-only ]] && build_only=1
build_packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev libssl-dev
  prometheus-cpp-dev libhwy-dev
)
test_packages=(
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 procps
  # the fuzz targets (tests/fuzz): clang with libFuzzer; the plot script of normbench (and its test)
  clang-14 libclang-rt-14-dev python3-matplotlib
  # the style checks (tests/style): the pinned formatter
  clang-format-14
  # the TLS tests make a throwaway CA and certificates at test time
  openssl
  # the Python client (client/python) and its tests: pytest, a venv to install it into, and what
  # it runs with (grpcio, numpy, torch; protobuf for its generated classes)
  python3-pytest python3-venv python3-pip python3-setuptools python3-wheel python3-numpy
  python3-grpcio python3-protobuf python3-torch
  # the deploy checks (tests/deploy): promtool and the server, yamllint, docker-compose config
  prometheus yamllint docker-compose python3-yaml
)
packages=("${build_packages[@]}")
((build_only)) || packages+=("${test_packages[@]}")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "install-deps: missing packages: ${missing[*]}; run as root (or: sudo $0)" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
((build_only)) && exit 0
# buf (the API's lint and breaking-change check, tests/style/check_proto.sh) comes from npm.
buf_version=1.75.0
if [[ "$(buf --version 2>/dev/null)" != "$buf_version" ]]; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "install-deps: buf $buf_version missing; run as root (or: sudo $0)" >&2
    exit 1
  fi
  if ! command -v npm >/dev/null; then
    # Only where npm is missing: a Node.js from elsewhere (NodeSource) already brings its own.
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nodejs npm
  fi
  echo "install-deps: installing buf $buf_version from npm"
  npm install --global --no-audit --no-fund "@bufbuild/buf@$buf_version"
fi
