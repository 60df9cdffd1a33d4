#!/usr/bin/env python3
"""Times normd's CUDA RMSNorm kernels against PyTorch, torch.compile and a Triton kernel, same run.

Runs on the GPU machine with its PyTorch and Triton. Our kernels are called through ctypes
(normd_cuda_rmsnorm in libnormd_cuda_kernels.so) on PyTorch's current stream. Anchors:
  F.rms_norm       torch.nn.functional.rms_norm (fused add: x + r in eager, then F.rms_norm)
  compile          torch.compile(dynamic=False) of the eager fp32 formula (fused add: x + r inside)
  triton           the seed article's two-loop Triton kernel (sum of squares loop, then a normalize loop),
                   written here from its description; for fused add the same kernel with r added in both
                   loops and h stored in the second
Rows >= 1024: triton.testing.do_bench medians (it clears L2 before every call by zeroing a 256 MB
buffer). Rows < 1024: 20 calls captured in one CUDA graph and replayed, L2-resident data, median
replay / 20. Bytes: 2*M*H*size + H*size plain, 4*M*H*size + H*size fused. One table out; ratio =
ours / fastest anchor (< 1: ours faster).

Beside the anchors, not one of them: "copy", torch's device-to-device copy of the same bytes (M*H
elements of the dtype for plain rows, 2*M*H for fused, read once and written once), timed the same
way. It is the ceiling at that shape under that method: ours / copy says how close ours is to
moving the bytes and nothing else.

--flush (rows >= 1024) chooses how L2 is emptied before each timed call: do_bench (its own loop,
the default and the targets' method), or this script's loop of events around each call after
"zero" (zeroing 256 MB, as do_bench does: it leaves L2 full of dirty lines that must be written
back while the timed call runs) or "read" (summing 256 MB: L2 left full of clean lines).

  python3 compare_kernels.py --lib .gpu/lib/libnormd_cuda_kernels.so [--dtypes bf16] [--rows ...]
          [--hidden ...] [--modes plain,fused] [--anchors frms,compile,triton]
          [--flush do_bench|zero|read] [--budget-s 300] [--csv out.csv]
"""
import argparse
import ctypes
import os
import sys
import time

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

DTYPES = {"fp32": (torch.float32, 1), "fp16": (torch.float16, 2), "bf16": (torch.bfloat16, 3)}
EPS = 1e-6


@triton.jit
def seed_rmsnorm_kernel(X, R, RO, Y, W, stride, N, eps, HAS_RES: tl.constexpr, BLOCK: tl.constexpr):
    # The seed article's kernel: one program per row, loop 1 accumulates x^2 over BLOCK-wide chunks,
    # loop 2 re-reads x, multiplies by inv_rms and w, and stores. HAS_RES adds r (our fused variant).
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    if HAS_RES:
        R += row * stride
        RO += row * stride
    ss = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        if HAS_RES:
            x += tl.load(R + cols, mask=mask, other=0.0).to(tl.float32)
        ss += x * x
    rms = tl.sqrt(tl.sum(ss) / N + eps)
    inv = 1.0 / rms
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(X + cols, mask=mask, other=0.0).to(tl.float32)
        if HAS_RES:
            x += tl.load(R + cols, mask=mask, other=0.0).to(tl.float32)
            tl.store(RO + cols, x.to(RO.dtype.element_ty), mask=mask)
        w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(Y + cols, (x * inv * w).to(Y.dtype.element_ty), mask=mask)


def triton_rmsnorm(x, w, y, r=None, ro=None):
    m, n = x.shape
    block = min(triton.next_power_of_2(n), 4096)
    warps = 4 if block <= 1024 else 8 if block <= 2048 else 16
    seed_rmsnorm_kernel[(m,)](x, r if r is not None else x, ro if ro is not None else y, y, w,
                              x.stride(0), n, EPS, HAS_RES=r is not None, BLOCK=block,
                              num_warps=warps)


def load_ours(lib_path):
    """normd's kernels through ctypes (normd_cuda_rmsnorm): a function of (x, w, y, r, ro, stream,
    pdl) that normalizes x (+ r) into y (and ro) on the CUDA stream handle given, with weights of
    w's dtype and weight_offset 0."""
    lib = ctypes.CDLL(os.path.abspath(lib_path))
    fn = lib.normd_cuda_rmsnorm
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                   ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_float,
                   ctypes.c_float, ctypes.c_void_p, ctypes.c_int]
    codes = {v[0]: v[1] for v in DTYPES.values()}

    def ours(x, w, y, r, ro, stream, pdl):
        err = fn(codes[x.dtype], x.shape[1], x.shape[0], x.data_ptr(), y.data_ptr(),
                 r.data_ptr() if r is not None else None, ro.data_ptr() if ro is not None else None,
                 w.data_ptr(), codes[w.dtype], EPS, 0.0, stream, pdl)
        if err != 0:
            raise RuntimeError(f"normd_cuda_rmsnorm returned {err}")

    return ours


def eager_plain(x, w):
    xf = x.float()
    var = xf.pow(2).mean(-1, keepdim=True)
    return (xf * torch.rsqrt(var + EPS) * w.float()).to(x.dtype)


def eager_fused(x, r, w):
    h = x.float() + r.float()
    var = h.pow(2).mean(-1, keepdim=True)
    return (h * torch.rsqrt(var + EPS) * w.float()).to(x.dtype), h.to(x.dtype)


def compiled_formulas():
    """torch.compile(dynamic=False) of eager_plain and eager_fused, with dynamo's recompile limits
    raised so that every shape of a run gets its own graph."""
    for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                 "accumulated_cache_size_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 100000)
    return torch.compile(eager_plain, dynamic=False), torch.compile(eager_fused, dynamic=False)


def implementations(ours, compiled, x, w, y, r, ro, pdl):
    """The calls timed at one shape, by name: ours (into y, and ro with a residual; pdl as
    normd_cuda_rmsnorm takes it) and the anchors. r is None for plain rows; compiled is what
    compiled_formulas returns."""
    compiled_plain, compiled_fused = compiled
    hidden = x.shape[1]
    impls = {"ours": lambda: ours(x, w, y, r, ro, torch.cuda.current_stream().cuda_stream, pdl)}
    if r is not None:
        impls["frms"] = lambda: F.rms_norm(x + r, (hidden,), w, EPS)
        impls["compile"] = lambda: compiled_fused(x, r, w)
        impls["triton"] = lambda: triton_rmsnorm(x, w, y, r, ro)
    else:
        impls["frms"] = lambda: F.rms_norm(x, (hidden,), w, EPS)
        impls["compile"] = lambda: compiled_plain(x, w)
        impls["triton"] = lambda: triton_rmsnorm(x, w, y)
    return impls


def copy_of_same_bytes(x, fused):
    """A call that copies as many bytes as the norm reads and writes (without the weight): M*H
    elements of x's dtype for plain rows, 2*M*H for fused ones, from one buffer into another."""
    elements = x.numel() * (2 if fused else 1)
    src = torch.randn(elements, device="cuda", dtype=torch.float32).to(x.dtype)
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


def copy_pair(x, r):
    """A call that copies x and r into two other buffers in one launch (torch._foreach_copy_): the
    four streams of a fused add (two read, two written) without the arithmetic."""
    dst = [torch.empty_like(x), torch.empty_like(r)]
    return lambda: torch._foreach_copy_(dst, [x, r])


class FlushedTimer:
    """Medians of events around single calls, each after emptying L2 one way (--flush): "zero"
    writes a 256 MB buffer, as do_bench's clear_cache does; "read" sums it. 10 warm-up calls,
    then `samples` timed ones."""

    def __init__(self, how, samples=100):
        self.buf = torch.ones((256 << 20) // 4, device="cuda", dtype=torch.int32)
        self.flush = self.buf.zero_ if how == "zero" else (lambda: self.buf.sum())
        self.samples = samples

    def __call__(self, call):
        for _ in range(10):
            self.flush()
            call()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.samples)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.samples)]
        for a, b in zip(starts, ends):
            self.flush()
            a.record()
            call()
            b.record()
        torch.cuda.synchronize()
        times = sorted(a.elapsed_time(b) * 1e3 for a, b in zip(starts, ends))
        return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=".gpu/lib/libnormd_cuda_kernels.so")
    ap.add_argument("--dtypes", default="bf16,fp16,fp32")
    ap.add_argument("--rows", default="1,8,128,1024,4096,16384,65536")
    ap.add_argument("--hidden", default="1024,3000,4096,5120,7168,8192,16384")
    ap.add_argument("--modes", default="plain,fused")
    ap.add_argument("--anchors", default="frms,compile,triton",
                    help="the anchors timed (copy is always timed, and is not an anchor)")
    ap.add_argument("--flush", default="do_bench", choices=("do_bench", "zero", "read"),
                    help="how L2 is emptied before each timed call at rows >= 1024")
    ap.add_argument("--budget-s", type=float, default=300.0)
    ap.add_argument("--csv", default="")
    args = ap.parse_args()

    ours = load_ours(args.lib)
    anchor_names = [a for a in args.anchors.split(",") if a]
    for a in anchor_names:
        if a not in ("frms", "compile", "triton"):
            ap.error(f"--anchors: unknown anchor {a!r} (frms, compile, triton)")

    compiled = compiled_formulas()

    dev = torch.cuda.get_device_properties(0)
    # Device copy ceiling, same run.
    buf = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(buf)
    t = triton.testing.do_bench(lambda: dst.copy_(buf), return_mode="median")
    copy_tbs = 2 * buf.numel() / (t * 1e-3) / 1e12
    del buf, dst
    print(f"# {dev.name}, torch {torch.__version__}, triton {triton.__version__}; "
          f"torch device copy {copy_tbs:.3f} TB/s; L2 flush: {args.flush}", flush=True)

    def time_graph(call):
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                call()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(20):
                call()
        for _ in range(10):
            g.replay()
        torch.cuda.synchronize()
        times = []
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        for _ in range(200):
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) * 1e3 / 20)
        times.sort()
        return times[len(times) // 2]

    if args.flush == "do_bench":
        def time_bench(call):
            return triton.testing.do_bench(call, warmup=10, rep=60, return_mode="median") * 1e3
    else:
        time_bench = FlushedTimer(args.flush)

    header = ("dtype", "mode", "rows", "H", "ours_us", "ours_TBs", "frms_us", "compile_us",
              "triton_us", "best_anchor", "ratio", "copy_us", "copy_TBs", "ours_over_copy")
    print("%-5s %-5s %6s %6s %9s %8s %9s %10s %9s %-8s %6s %8s %8s %6s" % header, flush=True)
    rows_out = []
    start = time.time()
    skipped = 0
    for dname in args.dtypes.split(","):
        dt, _ = DTYPES[dname]
        for mode in args.modes.split(","):
            fused = mode == "fused"
            for rows in [int(v) for v in args.rows.split(",")]:
                for hidden in [int(v) for v in args.hidden.split(",")]:
                    if rows * hidden * (4 if dt == torch.float32 else 2) > (4 << 30):
                        continue
                    if time.time() - start > args.budget_s:
                        skipped += 1
                        continue
                    torch.manual_seed(rows * 7 + hidden)
                    x = torch.randn(rows, hidden, device="cuda", dtype=dt)
                    r = torch.randn(rows, hidden, device="cuda", dtype=dt) if fused else None
                    w = torch.rand(hidden, device="cuda", dtype=dt) + 0.5
                    y = torch.empty_like(x)
                    ro = torch.empty_like(x) if fused else None
                    small = rows < 1024
                    impls = implementations(ours, compiled, x, w, y, r, ro, 1 if small else 0)
                    impls = {k: v for k, v in impls.items() if k == "ours" or k in anchor_names}
                    impls["copy"] = copy_of_same_bytes(x, fused)
                    # Correctness of ours against the fp32 eager formula (one check per shape).
                    impls["ours"]()
                    torch.cuda.synchronize()
                    ref = eager_fused(x, r, w)[0] if fused else eager_plain(x, w)
                    err = (y.float() - ref.float()).abs().max().item()
                    tol = 1e-4 if dt == torch.float32 else (2e-2 if dt == torch.bfloat16 else 4e-3)
                    scale = ref.float().abs().max().item()
                    if not err <= tol * max(scale, 1.0):
                        print(f"# MISMATCH {dname} {mode} {rows}x{hidden}: max err {err}", flush=True)
                    res = {}
                    for k, call in impls.items():
                        try:
                            res[k] = time_graph(call) if small else time_bench(call)
                        except Exception as e:  # an anchor failing must not stop the table
                            print(f"# {k} failed at {dname} {mode} {rows}x{hidden}: {e}", flush=True)
                            res[k] = float("nan")
                    anchors = {k: v for k, v in res.items() if k not in ("ours", "copy") and v == v}
                    best = min(anchors, key=anchors.get) if anchors else "-"
                    ratio = res["ours"] / anchors[best] if anchors else float("nan")
                    nbytes = ((4 if fused else 2) * rows * hidden + hidden) * x.element_size()
                    tbs = nbytes / (res["ours"] * 1e-6) / 1e12
                    nan = float("nan")
                    copy_tbs = (nbytes - hidden * x.element_size()) / (res["copy"] * 1e-6) / 1e12
                    line = (dname, mode, rows, hidden, res["ours"], tbs, res.get("frms", nan),
                            res.get("compile", nan), res.get("triton", nan), best, ratio,
                            res["copy"], copy_tbs, res["ours"] / res["copy"])
                    rows_out.append(line)
                    print("%-5s %-5s %6d %6d %9.2f %8.3f %9.2f %10.2f %9.2f %-8s %6.3f %8.2f %8.3f "
                          "%6.3f" % line, flush=True)
                    del x, r, w, y, ro, impls
                    torch.cuda.empty_cache()
    if skipped:
        print(f"# budget of {args.budget_s:.0f} s reached: {skipped} points not run", flush=True)
    if args.csv:
        with open(args.csv, "w") as f:
            f.write(",".join(header) + "\n")
            for line in rows_out:
                f.write(",".join(str(v) for v in line) + "\n")
    wins = sum(1 for l in rows_out if l[2] >= 1024 and l[10] < 1.0)
    total = sum(1 for l in rows_out if l[2] >= 1024)
    print(f"# rows >= 1024: ours fastest at {wins} of {total} points", flush=True)
    big = [l for l in rows_out if l[2] >= 16384]
    if big:
        print(f"# rows >= 16384: ours >= 4.2 TB/s at {sum(1 for l in big if l[5] >= 4.2)}, "
              f"the copy of the same bytes at {sum(1 for l in big if l[12] >= 4.2)} of {len(big)} "
              f"points", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
