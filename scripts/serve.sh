#!/usr/bin/env bash
# Quick start, command 1: installs what is missing, builds normd (Release; the CUDA backend too when
# nvcc is found) and starts it in the foreground on 127.0.0.1:50051. Extra arguments go to normd
# (e.g. --listen=0.0.0.0:50051 --backend=cpu); `normd --help` lists every flag.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target normd
exec ./build/release/server/normd "$@"
