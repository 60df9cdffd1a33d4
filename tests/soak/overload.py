#!/usr/bin/env python3
"""Overload test of normd: offered load at 4x what normd sustains, for 30 s.

Starts normd (CPU backend) with a queue budget (--max-queue-bytes), measures what it sustains with a
closed-loop normbench run (concurrency 16), then offers 4x that rate as Poisson arrivals for --seconds
while reading normd's resident memory every 0.2 s, then measures again at concurrency 1. Checks:
  - accepted requests all succeed: the only errors are RESOURCE_EXHAUSTED (refusals);
  - refusals happen: at 4x, most of the offered load is refused;
  - resident memory stays under the budget: idle RSS + 2 x --max-queue-bytes (requests and their
    responses) + --slack-mib for gRPC's transport buffers of requests read but not yet admitted;
  - recovery: right after the overload, at concurrency 1, throughput is at least half of what it was
    before the overload and p50 latency at most twice.

    python3 tests/soak/overload.py --build=build/cpu --seconds=30 --out=/tmp/overload
"""
import argparse
import csv
import os
import re
import subprocess
import sys
import threading
import time

from normd_run import rss_bytes, start_normd, stop_normd

SHAPE = ["--rows=16", "--hidden=4096", "--dtype=bf16"]  # 128 KiB requests




def bench(args, target, extra, name):
    path = os.path.join(args.out, name + ".csv")
    out = subprocess.run([os.path.join(args.build, "bench/load/normbench"), f"--target={target}", f"--csv={path}"]
                         + SHAPE + extra, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"overload: normbench {name} failed: {out.stderr}")
    with open(os.path.join(args.out, name + ".txt"), "w") as f:
        f.write(out.stdout)
    row = [r for r in csv.DictReader(open(path, newline="")) if r["server"] == "target"][-1]
    m = re.search(r"errors: (.*)", out.stdout)
    return row, (m.group(1).strip() if m else "")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build/cpu")
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--factor", type=float, default=4.0)
    p.add_argument("--max-queue-mib", type=int, default=16)
    p.add_argument("--slack-mib", type=int, default=128)
    p.add_argument("--out", default="/tmp/normd-overload")
    p.add_argument("--normd-arg", action="append", default=[], help="extra normd flag (repeatable)")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    normd, target = start_normd(args.build, args.out,
                                ["--backend=cpu", f"--max-queue-bytes={args.max_queue_mib << 20}"] + args.normd_arg,
                                "overload")
    failures, report = [], []
    try:
        rss_idle = rss_bytes(normd.pid)
        sustained, _ = bench(args, target, ["--concurrency=16", "--duration=3s", "--warmup=1s"], "sustained")
        before, _ = bench(args, target, ["--concurrency=1", "--duration=2s", "--warmup=0.5s"], "before")
        rate = args.factor * float(sustained["throughput_rps"])
        peak = [rss_idle]
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], rss_bytes(normd.pid))
                time.sleep(0.2)

        sampler = threading.Thread(target=sample)
        sampler.start()
        t0 = time.time()
        over, errors = bench(args, target, [f"--request-rate={rate:.0f}", "--arrivals=poisson",
                                            f"--duration={args.seconds}s", "--warmup=0s", "--stability=0"], "overload")
        elapsed = time.time() - t0
        stop.set()
        sampler.join()
        after, _ = bench(args, target, ["--concurrency=1", "--duration=2s", "--warmup=0s"], "after")
        budget = rss_idle + 2 * (args.max_queue_mib << 20) + (args.slack_mib << 20)
        codes = dict(kv.split("=") for kv in errors.split()) if errors else {}
        refused = int(codes.pop("RESOURCE_EXHAUSTED", 0))
        report += [
            f"sustained (closed loop, c=16): {float(sustained['throughput_rps']):.0f} req/s of 16x4096 bf16",
            f"offered: {rate:.0f} req/s ({args.factor:g}x) for {elapsed:.1f} s: {over['requests']} answered OK "
            f"({float(over['throughput_rps']):.0f} req/s, p50 {float(over['p50_us']):.0f} us, p99 "
            f"{float(over['p99_us']):.0f} us), {refused} refused RESOURCE_EXHAUSTED, other errors: {codes or 'none'}",
            f"resident memory: idle {rss_idle / 2**20:.1f} MiB, peak {peak[0] / 2**20:.1f} MiB, budget "
            f"{budget / 2**20:.1f} MiB (idle + 2 x {args.max_queue_mib} MiB queue + {args.slack_mib} MiB)",
            f"c=1 before: {float(before['throughput_rps']):.0f} req/s p50 {float(before['p50_us']):.0f} us; "
            f"right after: {float(after['throughput_rps']):.0f} req/s p50 {float(after['p50_us']):.0f} us",
        ]
        if codes:
            failures.append(f"errors other than RESOURCE_EXHAUSTED: {codes}")
        if refused == 0:
            failures.append("nothing was refused at 4x the sustained load")
        if peak[0] > budget:
            failures.append(f"resident memory {peak[0] / 2**20:.1f} MiB over the budget")
        if float(after["throughput_rps"]) < 0.5 * float(before["throughput_rps"]) or \
                float(after["p50_us"]) > 2 * float(before["p50_us"]):
            failures.append("did not recover at once")
        if normd.poll() is not None:
            failures.append(f"normd exited ({normd.returncode})")
    finally:
        stop_normd(normd)
    report.append("result: " + ("PASS" if not failures else "FAIL: " + "; ".join(failures)))
    open(os.path.join(args.out, "overload.md"), "w").write("\n".join(report) + "\n")
    print("\n".join(report))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
