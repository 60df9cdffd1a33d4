#!/usr/bin/env python3
"""Summarizes repeated normbench --baseline CSVs: per (rows, concurrency), the median over runs of the
target/baseline throughput ratio, with each run's ratio and the median p50 latencies, as a Markdown table.

    python3 bench/load/summarize_overhead.py /tmp/normd-overhead/r*_rep*.csv
"""
import csv
import statistics
import sys
from collections import defaultdict


def main(paths):
    # (rows, concurrency) -> list of per-run dicts {server: row}
    runs = defaultdict(list)
    for path in paths:
        with open(path, newline="") as f:
            by_point = defaultdict(dict)
            for row in csv.DictReader(f):
                by_point[(int(row["rows"]), int(row["concurrency"]))][row["server"]] = row
        for point, servers in by_point.items():
            if "target" in servers and "baseline" in servers:
                runs[point].append(servers)
    if not runs:
        sys.exit("no target/baseline pairs in " + " ".join(paths))
    print("| shape | concurrency | runs | ratio per run | **median ratio** | median normd / echo req/s "
          "| median normd / echo p50 µs | normd mean batch_requests |")
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |")
    for (rows, conc) in sorted(runs):
        pairs = runs[(rows, conc)]
        ratios = [float(p["target"]["throughput_rps"]) / float(p["baseline"]["throughput_rps"]) for p in pairs]

        def med(server, field):
            return statistics.median(float(p[server][field]) for p in pairs)

        hidden, dtype = pairs[0]["target"]["hidden"], pairs[0]["target"]["dtype"]
        print(f"| {rows}×{hidden} {dtype} | {conc} | {len(pairs)} | {', '.join(f'{r:.2f}' for r in ratios)} "
              f"| **{statistics.median(ratios):.2f}** | {med('target', 'throughput_rps'):.0f} / "
              f"{med('baseline', 'throughput_rps'):.0f} | {med('target', 'p50_us'):.0f} / "
              f"{med('baseline', 'p50_us'):.0f} | {med('target', 'mean_batch_requests'):.2f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
