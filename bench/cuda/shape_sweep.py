#!/usr/bin/env python3
"""Our kernel's variants timed the way compare_kernels.py times the anchors, beside them.

normd_kernel_bench tunes shapes back to back with programmatic dependent launch and rotating
buffers; issue 3's targets are compare_kernels.py's figures: triton.testing.do_bench medians, L2
cleared before every call, no PDL for rows >= 1024. Where a launch is a few microseconds (1024
rows) the two disagree on which layout is fastest. This script times, at each shape given, our
kernel under each variant (RmsNormOptions' overrides through normd_cuda_rmsnorm_tuned) and the
anchors, all with do_bench in the same run (--rounds times, interleaved: medians), checks each
variant's output against the fp32 eager formula, and prints one line per shape and variant with
its ratio to the fastest anchor. With --ceilings, torch's copy of the same bytes (and for fused
rows x and r copied in one launch) are timed beside them, as ceilings rather than anchors.

  python3 bench/cuda/shape_sweep.py --lib .gpu/lib/libnormd_cuda_kernels.so \\
      --shapes bf16:plain:1024x1024,fp32:plain:4096x1024 \\
      --variants auto,reload=on+n=1,reload=on+n=2,reload=off,lean=on,pdl=1 [--anchors triton,compile]

--lib may name several builds of the library (comma separated): each variant is then timed on
each, labelled by its position (0:, 1:, ...), for a same-run A/B of two builds.

A variant is "auto" or keys joined by "+": reload, lean, staging, warp (the warp-row kernel)
(auto / off / on), n (vectors per thread), g (threads per row), b (rows per block), cluster (CTAs
per row in a cluster), split (CTAs per row of the split-row kernel), pdl (0 none, 1 weight after
the wait, 2 before). A variant the library
refuses for a shape (an override that cannot hold the row) prints "refused".
"""
import argparse
import ctypes
import os
import statistics
import sys

import torch
import triton

from compare_kernels import (DTYPES, EPS, compiled_formulas, copy_of_same_bytes, copy_pair,
                             eager_fused, eager_plain, implementations)

TRISTATE = {"auto": 0, "off": 1, "on": 2}
KEYS = ("pdl", "reload", "lean", "staging", "n", "g", "cluster", "split", "warp", "b")


def parse_variant(spec):
    """{key: int} in KEYS order from "auto" or "reload=on+n=2"."""
    values = dict.fromkeys(KEYS, 0)
    if spec == "auto":
        return values
    for part in spec.split("+"):
        key, _, value = part.partition("=")
        if key not in values:
            raise ValueError(f"unknown key {key!r} in variant {spec!r}")
        values[key] = (TRISTATE[value] if key in ("reload", "lean", "staging", "warp")
                       else int(value))
    return values


def load_tuned(lib_path):
    """normd_cuda_rmsnorm_tuned through ctypes: a function of (x, w, y, r, ro, stream, variant)
    returning the cudaError_t (0: launched)."""
    lib = ctypes.CDLL(os.path.abspath(lib_path))
    fn = lib.normd_cuda_rmsnorm_tuned
    fn.restype = ctypes.c_int
    fn.argtypes = ([ctypes.c_int, ctypes.c_int64, ctypes.c_int64] + [ctypes.c_void_p] * 5 +
                   [ctypes.c_int, ctypes.c_float, ctypes.c_float, ctypes.c_void_p] +
                   [ctypes.c_int] * len(KEYS))
    codes = {v[0]: v[1] for v in DTYPES.values()}

    def call(x, w, y, r, ro, stream, variant):
        return fn(codes[x.dtype], x.shape[1], x.shape[0], x.data_ptr(), y.data_ptr(),
                  r.data_ptr() if r is not None else None, ro.data_ptr() if ro is not None else None,
                  w.data_ptr(), codes[w.dtype], EPS, 0.0, stream, *(variant[k] for k in KEYS))

    return call


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=".gpu/lib/libnormd_cuda_kernels.so",
                    help="one library, or several (comma separated) to time each variant on each")
    ap.add_argument("--shapes", required=True, help="dtype:mode:ROWSxH, comma separated")
    ap.add_argument("--variants", default="auto")
    ap.add_argument("--anchors", default="triton,compile,frms")
    ap.add_argument("--ceilings", action="store_true",
                    help="also time torch's copy of the same bytes (ceiling:copy) and, for fused "
                         "rows, x and r copied in one launch (ceiling:copy_pair); not anchors")
    ap.add_argument("--rep-ms", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=1,
                    help="times each call this many times, interleaved; prints medians")
    args = ap.parse_args()
    # Distinct files load as distinct libraries (ctypes loads each RTLD_LOCAL: each one's entry
    # calls its own kernels).
    tuned = [load_tuned(path) for path in args.lib.split(",")]
    compiled = compiled_formulas() if "compile" in args.anchors.split(",") else (None, None)
    variants = [(spec, parse_variant(spec)) for spec in args.variants.split(",")]

    def bench(call):
        return triton.testing.do_bench(call, warmup=10, rep=args.rep_ms, return_mode="median") * 1e3

    print("%-22s %-34s %9s %7s %s" % ("shape", "variant", "us", "ratio", "note"), flush=True)
    for spec in args.shapes.split(","):
        dname, mode, dims = spec.split(":")
        rows, hidden = (int(v) for v in dims.split("x"))
        dt = DTYPES[dname][0]
        torch.manual_seed(rows * 7 + hidden)
        x = torch.randn(rows, hidden, device="cuda", dtype=dt)
        fused = mode == "fused"
        r = torch.randn_like(x) if fused else None
        w = torch.rand(hidden, device="cuda", dtype=dt) + 0.5
        y = torch.empty_like(x)
        ro = torch.empty_like(x) if fused else None
        ref = (eager_fused(x, r, w)[0] if fused else eager_plain(x, w)).float()
        tol = 1e-4 if dt == torch.float32 else (2e-2 if dt == torch.bfloat16 else 4e-3)
        limit = tol * max(ref.abs().max().item(), 1.0)
        impls = implementations(lambda *a: None, compiled, x, w, y, r, ro, 0)
        stream = torch.cuda.current_stream().cuda_stream
        # Every call to time at this shape, by label; ours checked once before timing.
        calls = {"anchor:" + name: impls[name] for name in args.anchors.split(",")}
        if args.ceilings:
            calls["ceiling:copy"] = copy_of_same_bytes(x, fused)
            if fused:
                calls["ceiling:copy_pair"] = copy_pair(x, r)
        notes = {}
        for vspec, variant in variants:
            for i, fn in enumerate(tuned):
                label = f"{i}:{vspec}" if len(tuned) > 1 else vspec
                y.fill_(float("nan"))
                if fn(x, w, y, r, ro, stream, variant) != 0:
                    notes[label] = "refused"
                    continue
                torch.cuda.synchronize()
                err = (y.float() - ref).abs().max().item()
                notes[label] = "" if err <= limit else f"MISMATCH max err {err:.3g}"
                calls[label] = (lambda fn=fn, variant=variant:
                                fn(x, w, y, r, ro, stream, variant))
        # Rounds interleave the calls, so that a slow spell of the machine hits all of them.
        times = {label: [] for label in calls}
        for _ in range(args.rounds):
            for label, call in calls.items():
                times[label].append(bench(call))
        med = {label: statistics.median(t) for label, t in times.items()}
        best = min(med[l] for l in med if l.startswith("anchor:"))
        shown = [l for l in med if l.startswith("anchor:") or l.startswith("ceiling:")]
        for label in shown + list(notes):
            if label not in med:
                print("%-22s %-34s %9s %7s %s" % (spec, label, "-", "-", notes[label]), flush=True)
                continue
            print("%-22s %-34s %9.2f %7.3f %s" % (spec, label, med[label], med[label] / best,
                                                  notes.get(label, "")), flush=True)
        del x, r, w, y, ro, ref, impls, calls
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
