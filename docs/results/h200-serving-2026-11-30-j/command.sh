#!/usr/bin/env bash
# One nvidia-h200 call (2026-11-30): the integration suite against normd --backend=cuda with the v6
# kernel library (the lean two-pass kernel in the automatic choice).
STEPS=integration bash tests/gpu/run_server_h200.sh
