#!/usr/bin/env bash
# The first nvidia-h200 call of 2026-11-30's second session (run by a helper as one command line, kept
# here as it ran): the kernel bench with and without PDL back to back, a vectors-per-thread sweep at
# 1024 rows, and run_h200.sh's probe step (torch.compile's generated kernels, ncu of them and of ours).
# Three of its eleven output files did not come back (the tool returns at most eight): sweep.log and
# ncu_ours for bf16 plain 16384 x 7168 and 65536 x 8192. inductor_code.log (Inductor's generated
# source) was read and is not kept.
export OUT; nvidia-smi --query-gpu=name,clocks.sm --format=csv; STEPS="bench sweep probe" BENCH_ARGS="--dtypes bf16,fp16,fp32 --rows 1,8,1024,4096,16384,65536" SWEEP_ARGS="--dtypes bf16 --rows 1024 --hidden 1024,4096,8192 --modes plain,fused" bash bench/cuda/run_h200.sh 2>&1 | tail -60
