#!/usr/bin/env bash
# One nvidia-h200 call (2026-11-30, third session): the integration suite against normd --backend=cuda
# with the v7 kernel library (the cluster kernel for few long rows, the weight through shared memory
# for one-wave launches with a residual).
STEPS=integration bash tests/gpu/run_server_h200.sh
