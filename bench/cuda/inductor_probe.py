#!/usr/bin/env python3
"""What torch.compile does for RMSNorm at a few shapes: its generated kernels, and a run of them for ncu
(or, with --anchor triton, a run of compare_kernels.py's seed Triton kernel).

Compiles compare_kernels.py's eager formulas (plain, and x + r followed by the norm) with
torch.compile(dynamic=False) for each shape given, runs each compiled function --calls times on
one set of random inputs, and exits. Run it with TORCH_LOGS=output_code to get Inductor's Triton
source (kernel configuration: rows per program, warps, eviction policies) on stderr, or under ncu
to read the kernels' counters beside ours (ncu --kernel-name regex:triton).

    python3 bench/cuda/inductor_probe.py --shapes bf16:plain:1024x4096,bf16:fused:65536x4096
"""
import argparse
import sys

import torch

from compare_kernels import compiled_formulas, triton_rmsnorm

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", required=True, help="dtype:mode:ROWSxH, comma separated")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--anchor", default="compile", choices=("compile", "triton"),
                    help="compile: torch.compile's kernels; triton: compare_kernels.py's seed kernel")
    args = ap.parse_args()
    if args.anchor == "triton":
        def compiled_plain(x, w):
            triton_rmsnorm(x, w, torch.empty_like(x))

        def compiled_fused(x, r, w):
            triton_rmsnorm(x, w, torch.empty_like(x), r, torch.empty_like(x))
    else:
        compiled_plain, compiled_fused = compiled_formulas()
    for spec in args.shapes.split(","):
        dname, mode, dims = spec.split(":")
        rows, hidden = (int(v) for v in dims.split("x"))
        dt = DTYPES[dname]
        torch.manual_seed(rows + hidden)
        x = torch.randn(rows, hidden, device="cuda", dtype=dt)
        w = torch.rand(hidden, device="cuda", dtype=dt) + 0.5
        print(f"# {spec}", flush=True)
        if mode == "fused":
            r = torch.randn(rows, hidden, device="cuda", dtype=dt)
            for _ in range(args.calls):
                compiled_fused(x, r, w)
        else:
            for _ in range(args.calls):
                compiled_plain(x, w)
        torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
