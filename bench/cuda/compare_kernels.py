#!/usr/bin/env python3
"""normd's CUDA RMSNorm (its automatic choice) against PyTorch, torch.compile and a Triton kernel,
all timed the same way in the same run: by kernel time.

Runs on the GPU machine with its PyTorch and Triton. Ours is called through ctypes
(normd_cuda_rmsnorm in libnormd_cuda_kernels.so) on PyTorch's current stream. Anchors:
  frms      torch.nn.functional.rms_norm (with a residual: x + r in eager, then F.rms_norm)
  compile   torch.compile(dynamic=False) of the eager fp32 formula (with a residual: x + r inside)
  triton    the seed article's two-loop Triton kernel (sum of squares loop, then a normalize loop),
            written here from its description; with a residual, r added in both loops and h stored
Beside them, not an anchor: "copy", torch's device copy of the same bytes (x into y, and r into
residual_out), the ceiling at that shape.

Method: every call (ours, each anchor, the copy) is captured `calls` times into one CUDA graph,
replayed for 5 ms to warm up and then 7 times; its time is the median replay over `calls`. Host dispatch (torch.compile's
guards, eager's allocations) is then out of every figure. Each call of a graph takes the next of
`sets` copies of the inputs and outputs, enough that the other copies pass three times L2, so that
a call finds its data outside L2 as after a flush (launches of under ~0.5 MB stay L2-resident:
too many copies would be needed). Ours is timed twice, first and last, to show the noise band.
torch.compile's kernels are compiled first by --warm-workers processes in parallel (the Inductor
and Triton caches on disk); the timing then runs alone on the GPU.

  python3 compare_kernels.py --lib build/kernels/cuda/libnormd_cuda_kernels.so
          [--points grid|offgrid|all] [--dtypes bf16,fp16,fp32] [--max-points N] [--budget-s 240]
          [--csv out.csv] [--warm-workers 12] [--table-file kernels/cuda/tables/sm_90.csv]
"""
import argparse
import ctypes
import multiprocessing as mp
import os
import random
import statistics
import sys
import time

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

DTYPES = {"fp32": (torch.float32, 1), "fp16": (torch.float16, 2), "bf16": (torch.bfloat16, 3)}
EPS = 1e-6
# The sweep's grid at rows >= 512 (bench/cuda/kernel_sweep.cc), and widths of real models.
GRID_HIDDEN = [128, 256, 384, 512, 768, 1024, 1536, 2048, 2560, 3072, 4096, 5120, 6144, 7168,
               8192, 10240, 12288, 14336, 16384, 20480, 24576, 32768, 49152, 65536]
GRID_ROWS = [512, 2048, 8192, 32768, 131072]
OFFGRID = [(896, 65536), (1536, 20000), (2048, 100000), (2304, 4000), (3584, 16000),
           (4608, 3000), (5376, 9000), (6656, 1200), (9216, 7000), (12288, 1000), (13824, 5000),
           (18432, 600), (3001, 40000), (1031, 70000)]


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


def use_table(lib_path, table_path):
    """Makes the library take the choice table at table_path (a table just swept) instead of the
    one compiled in (normd_cuda_override_table)."""
    lib = ctypes.CDLL(os.path.abspath(lib_path))
    lib.normd_cuda_override_table.restype = ctypes.c_int
    lib.normd_cuda_override_table.argtypes = [ctypes.c_int, ctypes.c_char_p]
    prop = torch.cuda.get_device_properties(0)
    with open(table_path, "rb") as f:
        if lib.normd_cuda_override_table(prop.major * 10 + prop.minor, f.read()) != 0:
            raise RuntimeError(f"{table_path}: not a choice table")


def load_ours(lib_path):
    """normd_cuda_rmsnorm through ctypes: ours(x, w, y, r, ro, stream) normalizes x (+ r) into y
    (and ro) with weights of w's dtype, weight_offset 0, no programmatic dependent launch."""
    lib = ctypes.CDLL(os.path.abspath(lib_path))
    fn = lib.normd_cuda_rmsnorm
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                   ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_float,
                   ctypes.c_float, ctypes.c_void_p, ctypes.c_int]
    codes = {v[0]: v[1] for v in DTYPES.values()}

    def ours(x, w, y, r, ro, stream):
        err = fn(codes[x.dtype], x.shape[1], x.shape[0], x.data_ptr(), y.data_ptr(),
                 r.data_ptr() if r is not None else None, ro.data_ptr() if ro is not None else None,
                 w.data_ptr(), codes[w.dtype], EPS, 0.0, stream, 0)
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


def points(which, dtypes, seed=44):
    """(dtype, fused, rows, H) in timing order: the grid's rows >= 512 points (tensors capped at
    1 GiB) and the off-grid widths, shuffled with a fixed seed so that a budget cut samples them
    evenly."""
    out = []
    for d in dtypes:
        size = 4 if d == "fp32" else 2
        for fused in (False, True):
            if which in ("grid", "all"):
                out += [(d, fused, m, h) for h in GRID_HIDDEN for m in GRID_ROWS
                        if m * h * size <= (1 << 30)]
            if which in ("offgrid", "all"):
                out += [(d, fused, m, h) for h, m in OFFGRID]
    random.Random(seed).shuffle(out)
    return out


def warm_compile(shapes):
    """Worker: compile the torch.compile anchor for each (dtype, fused, rows, H) into the caches."""
    compiled_plain, compiled_fused = compiled_formulas()
    for d, fused, m, h in shapes:
        dt = DTYPES[d][0]
        x = torch.randn(m, h, device="cuda", dtype=dt)
        w = torch.rand(h, device="cuda", dtype=dt) + 0.5
        if fused:
            compiled_fused(x, torch.randn_like(x), w)
        else:
            compiled_plain(x, w)
        torch.cuda.synchronize()
        del x, w
        torch.cuda.empty_cache()
    return len(shapes)


def graph_time_us(call, sets, calls):
    """Median kernel time of one call: call(i) for i < calls captured into one graph, replayed for
    5 ms to warm up, then 7 timed replays."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(min(sets, 3)):
            call(i)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(calls):
            call(i)
    # Warm up for at least 5 ms of replays: the first replays after an idle gap (host work
    # between points) run at lower clocks.
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    warm_ms = 0.0
    for _ in range(50):
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        warm_ms += a.elapsed_time(b)
        if warm_ms >= 5.0:
            break
    times = []
    for _ in range(7):
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / calls)
    del g
    return statistics.median(times)


class Point:
    """The tensors of one (dtype, fused, rows, H): `sets` copies of x, r, y, ro, one weight."""

    def __init__(self, d, fused, rows, hidden, l2_bytes):
        self.d, self.fused, self.rows, self.hidden = d, fused, rows, hidden
        dt = DTYPES[d][0]
        tensor = rows * hidden * (4 if d == "fp32" else 2)
        footprint = tensor * (4 if fused else 2)
        self.sets = max(1, min(256, 3 * l2_bytes // footprint + 1, (4 << 30) // tensor))
        expected_us = footprint / 3.5e6 + 2
        self.calls = max(3, min(256, max(self.sets, int(300 / expected_us) + 1)))
        self.x = [torch.randn(rows, hidden, device="cuda", dtype=dt) for _ in range(self.sets)]
        self.r = [torch.randn_like(self.x[0]) for _ in range(self.sets)] if fused else None
        self.y = [torch.empty_like(self.x[0]) for _ in range(self.sets)]
        self.ro = [torch.empty_like(self.x[0]) for _ in range(self.sets)] if fused else None
        self.w = torch.rand(hidden, device="cuda", dtype=dt) + 0.5
        self.bytes = footprint + hidden * self.x[0].element_size()

    def call(self, name, ours, compiled):
        s = self.sets
        stream = lambda: torch.cuda.current_stream().cuda_stream  # noqa: E731
        f = self.fused
        x, r, y, ro, w, h = self.x, self.r, self.y, self.ro, self.w, self.hidden
        if name == "ours":
            return lambda i: ours(x[i % s], w, y[i % s], r[i % s] if f else None,
                                  ro[i % s] if f else None, stream())
        if name == "frms":
            return (lambda i: F.rms_norm(x[i % s] + r[i % s], (h,), w, EPS)) if f else \
                (lambda i: F.rms_norm(x[i % s], (h,), w, EPS))
        if name == "compile":
            plain, fused = compiled
            return (lambda i: fused(x[i % s], r[i % s], w)) if f else (lambda i: plain(x[i % s], w))
        if name == "triton":
            return lambda i: triton_rmsnorm(x[i % s], w, y[i % s], r[i % s] if f else None,
                                            ro[i % s] if f else None)
        if name == "copy":
            def copy(i):
                y[i % s].copy_(x[i % s])
                if f:
                    ro[i % s].copy_(r[i % s])
            return copy
        raise ValueError(name)

    def check_ours(self, ours):
        """Our output at set 0 against the fp32 eager formula; the largest error, or None."""
        ours(self.x[0], self.w, self.y[0], self.r[0] if self.fused else None,
             self.ro[0] if self.fused else None, torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        ref = eager_fused(self.x[0], self.r[0], self.w)[0] if self.fused else \
            eager_plain(self.x[0], self.w)
        err = (self.y[0].float() - ref.float()).abs().max().item()
        tol = {"fp32": 1e-4, "bf16": 2e-2, "fp16": 4e-3}[self.d]
        return None if err <= tol * max(ref.float().abs().max().item(), 1.0) else err


def summarize(results):
    """The distribution of ours over the fastest anchor, and over the copy, printed last."""
    def line(label, ratios):
        if not ratios:
            return
        n = len(ratios)
        print(f"# {label}: {n} points; <= 1.00 at {sum(r <= 1.00 for r in ratios) / n:.1%}, "
              f"<= 1.02 at {sum(r <= 1.02 for r in ratios) / n:.1%}, <= 1.05 at "
              f"{sum(r <= 1.05 for r in ratios) / n:.1%}; median {statistics.median(ratios):.3f}, "
              f"max {max(ratios):.3f}", flush=True)

    with_anchor = [p for p in results if p["best_anchor"] is not None]
    line("ours / fastest anchor, rows >= 512", [p["ratio"] for p in with_anchor if p["rows"] >= 512])
    line("ours / fastest anchor, off-grid widths",
         [p["ratio"] for p in with_anchor if (p["hidden"], p["rows"]) in OFFGRID])
    worst = sorted(with_anchor, key=lambda p: -p["ratio"])[:5]
    for p in worst:
        print(f"#   worst: {p['dtype']} {'fused' if p['fused'] else 'plain'} {p['rows']}x"
              f"{p['hidden']}: {p['ratio']:.3f} of {p['best_anchor']} "
              f"({p['ours']:.2f} us against {p[p['best_anchor']]:.2f})", flush=True)
    line("ours / copy of the same bytes where the copy takes >= 20 us",
         [p["ours"] / p["copy"] for p in results if p["copy"] >= 20])
    noise = [abs(p["ours2"] / p["ours"] - 1) for p in results]
    if noise:
        noise.sort()
        print(f"# noise: ours timed twice, |second / first - 1| median {statistics.median(noise):.2%},"
              f" p90 {noise[int(0.9 * (len(noise) - 1))]:.2%}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=".gpu/lib/libnormd_cuda_kernels.so")
    ap.add_argument("--points", default="all", choices=("grid", "offgrid", "all"))
    ap.add_argument("--dtypes", default="bf16,fp16,fp32")
    ap.add_argument("--anchors", default="frms,compile,triton")
    ap.add_argument("--budget-s", type=float, default=240.0)
    ap.add_argument("--max-points", type=int, default=100000)
    ap.add_argument("--warm-workers", type=int, default=12)
    ap.add_argument("--csv", default="")
    ap.add_argument("--table-file", default="",
                    help="a choice table to take instead of the one compiled into the library")
    args = ap.parse_args()
    start = time.time()
    anchors = [a for a in args.anchors.split(",") if a]
    todo = points(args.points, args.dtypes.split(","))[:args.max_points]

    if "compile" in anchors and args.warm_workers > 0:
        # Compile the torch.compile anchor for every point first, in parallel processes (one
        # compile thread each) that fill Inductor's and Triton's caches on disk; then the timing,
        # alone on the GPU, finds the compiled kernels there.
        os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
        ctx = mp.get_context("spawn")
        with ctx.Pool(args.warm_workers) as pool:
            chunks = [todo[i::args.warm_workers] for i in range(args.warm_workers)]
            try:
                pool.map_async(warm_compile, chunks).get(timeout=args.budget_s * 0.5)
            except Exception as e:
                print(f"# compile warm-up incomplete: {e!r}", flush=True)
            pool.terminate()
        print(f"# compile caches warm after {time.time() - start:.0f} s", flush=True)

    ours = load_ours(args.lib)
    if args.table_file:
        use_table(args.lib, args.table_file)
    compiled = compiled_formulas() if "compile" in anchors else None
    dev = torch.cuda.get_device_properties(0)
    l2 = getattr(dev, "L2_cache_size", 60 << 20)
    print(f"# {dev.name}, torch {torch.__version__}, triton {triton.__version__}; kernel time by "
          f"graph replay, inputs rotated past L2 ({l2 >> 20} MB)", flush=True)
    header = ("dtype", "fused", "rows", "hidden", "ours", "ours2", "frms", "compile", "triton",
              "copy", "best_anchor", "ratio", "ours_tbs", "copy_tbs")
    results = []
    for d, fused, rows, hidden in todo:
        if time.time() - start > args.budget_s:
            break
        p = Point(d, fused, rows, hidden, l2)
        bad = p.check_ours(ours)
        if bad is not None:
            print(f"# MISMATCH {d} {'fused' if fused else 'plain'} {rows}x{hidden}: max err {bad}",
                  flush=True)
        res = {"dtype": d, "fused": fused, "rows": rows, "hidden": hidden}
        for name in ["ours"] + anchors + ["copy", "ours2"]:
            try:
                res[name] = graph_time_us(
                    p.call("ours" if name == "ours2" else name, ours, compiled), p.sets, p.calls)
            except Exception as e:  # an anchor failing must not stop the table
                print(f"# {name} failed at {d} {rows}x{hidden}: {e}", flush=True)
                res[name] = float("nan")
        res["bytes"] = p.bytes
        results.append(res)
        del p
        torch.cuda.empty_cache()
    print("%-5s %-5s %7s %6s %9s %9s %9s %9s %9s %9s %-8s %6s %6s %6s" % header, flush=True)
    for res in results:
        found = {a: res.get(a, float("nan")) for a in anchors}
        found = {a: v for a, v in found.items() if v == v}
        res["best_anchor"] = min(found, key=found.get) if found else None
        res["ratio"] = res["ours"] / found[res["best_anchor"]] if found else float("nan")
        res["ours_tbs"] = res["bytes"] / (res["ours"] * 1e-6) / 1e12
        res["copy_tbs"] = (res["bytes"] - res["hidden"] * (4 if res["dtype"] == "fp32" else 2)) / \
            (res["copy"] * 1e-6) / 1e12
        print("%-5s %-5s %7d %6d %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %-8s %6.3f %6.3f %6.3f" % (
            res["dtype"], "fused" if res["fused"] else "plain", res["rows"], res["hidden"],
            res["ours"], res["ours2"], res.get("frms", float("nan")),
            res.get("compile", float("nan")), res.get("triton", float("nan")), res["copy"],
            res["best_anchor"] or "-", res["ratio"], res["ours_tbs"], res["copy_tbs"]), flush=True)
    if args.csv:
        with open(args.csv, "w") as f:
            f.write(",".join(header) + "\n")
            for res in results:
                f.write(",".join(str(res.get(k, "")) for k in header) + "\n")
    print(f"# {len(results)} of {len(todo)} points in {time.time() - start:.0f} s", flush=True)
    summarize(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
