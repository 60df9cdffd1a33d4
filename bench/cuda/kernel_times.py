#!/usr/bin/env python3
"""How much of a do_bench figure is the kernel itself: ours and the anchors of compare_kernels.py,
each timed two ways in the same run at the shapes given.

  do_bench   triton.testing.do_bench median (L2 cleared before every call; events around the call),
             what compare_kernels.py reports for rows >= 1024
  kernel     the device time of the kernels the call launched, from torch.profiler (CUPTI), summed
             per call and averaged over --reps calls, each after the same L2 clearing as do_bench's

A call whose do_bench figure is well above its kernel time pays for something outside its kernels
(launch latency, a gap before the kernel starts); one whose kernel time is above another's pays in
the kernel. Runs on the GPU machine:

  python3 bench/cuda/kernel_times.py --lib .gpu/lib/libnormd_cuda_kernels.so \\
      --shapes bf16:plain:1024x1024,fp32:plain:4096x1024 [--reps 50]
"""
import argparse
import sys

import torch
import triton
from torch.profiler import ProfilerActivity, profile

from compare_kernels import DTYPES, compiled_formulas, implementations, load_ours


def kernel_time_us(call, flush, reps):
    """Mean device time per call of the kernels `call` launches, each call after `flush`."""
    for _ in range(3):
        flush()
        call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        flush()
        torch.cuda.synchronize()
        for _ in range(reps):
            flush()
            call()
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    if not kernels:
        raise RuntimeError("the profiler recorded no CUDA kernels")
    # The profile opens with a flush: the first kernel recorded is the flush kernel.
    kernels.sort(key=lambda e: e.time_range.start)
    flush_name = kernels[0].name
    return sum(e.time_range.elapsed_us() for e in kernels if e.name != flush_name) / reps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=".gpu/lib/libnormd_cuda_kernels.so")
    ap.add_argument("--shapes", required=True, help="dtype:mode:ROWSxH, comma separated")
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    ours = load_ours(args.lib)
    compiled = compiled_formulas()
    cache = torch.empty(256 << 20, dtype=torch.int8, device="cuda")  # as do_bench clears L2
    flush = cache.zero_
    print("%-24s %-8s %10s %10s %10s" % ("shape", "impl", "do_bench", "kernel", "outside"))
    for spec in args.shapes.split(","):
        dname, mode, dims = spec.split(":")
        rows, hidden = (int(v) for v in dims.split("x"))
        dt = DTYPES[dname][0]
        torch.manual_seed(rows + hidden)
        x = torch.randn(rows, hidden, device="cuda", dtype=dt)
        w = torch.rand(hidden, device="cuda", dtype=dt) + 0.5
        y = torch.empty_like(x)
        fused = mode == "fused"
        r = torch.randn_like(x) if fused else None
        ro = torch.empty_like(x) if fused else None
        for name, call in implementations(ours, compiled, x, w, y, r, ro, 0).items():
            bench_us = triton.testing.do_bench(call, warmup=10, rep=60, return_mode="median") * 1e3
            kernel_us = kernel_time_us(call, flush, args.reps)
            print("%-24s %-8s %10.2f %10.2f %10.2f" % (spec, name, bench_us, kernel_us,
                                                       bench_us - kernel_us), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
