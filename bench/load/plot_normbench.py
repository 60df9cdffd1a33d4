#!/usr/bin/env python3
"""Turns normbench CSVs into a latency-vs-throughput PNG (docs/PERFORMANCE.md's grids).

One line per (CSV file, server): x = throughput (requests/s), y = p50 and p99 latency (µs, log scale),
one marker per load point, labelled with its concurrency. Needs Debian's python3-matplotlib.

    python3 bench/load/plot_normbench.py out_1x4096.csv out_64x4096.csv -o overhead.png
"""
import argparse
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")  # no display on servers and CI
import matplotlib.pyplot as plt  # noqa: E402


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", nargs="+", help="normbench --csv outputs")
    parser.add_argument("-o", "--output", default="normbench.png", help="PNG to write")
    parser.add_argument("--title", default="normd vs normd-echo: latency against throughput")
    args = parser.parse_args()

    fig, ax = plt.subplots(figsize=(8, 5))
    for path in args.csv:
        rows = read_rows(path)
        for server in sorted({r["server"] for r in rows}):
            # In load order (closed-loop clients): past saturation throughput may fall while latency grows,
            # and a line in throughput order would zigzag between the points.
            points = sorted((r for r in rows if r["server"] == server), key=lambda r: int(r["concurrency"]))
            if not points:
                continue
            shape = f'{points[0]["rows"]}x{points[0]["hidden"]} {points[0]["dtype"]}'
            label = f"{server} {shape} ({os.path.basename(path)})"
            x = [float(r["throughput_rps"]) for r in points]
            p50 = [float(r["p50_us"]) for r in points]
            p99 = [float(r["p99_us"]) for r in points]
            (line,) = ax.plot(x, p50, marker="o", label=f"{label} p50")
            ax.plot(x, p99, marker="x", linestyle="--", color=line.get_color(), label=f"{label} p99")
            for r, xv, yv in zip(points, x, p50):
                ax.annotate(f'c={r["concurrency"]}', (xv, yv), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xlabel("throughput (requests/s)")
    ax.set_ylabel("latency (µs)")
    ax.set_yscale("log")
    ax.set_title(args.title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
