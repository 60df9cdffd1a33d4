#!/usr/bin/env python3
"""Two kernel library builds side by side, from `normd_kernel_bench batched` logs taken in
alternation (run_kernels_h200.sh's before_after step): for each row of the bench, the median over
rounds of the single segment's time, the table's time and their ratio, before → after.

    python3 batched_before_after.py OUT_DIR

OUT_DIR holds batched-before-<round>.log and batched-after-<round>.log. Rows missing from either
side are left out; the last line counts the bench's reference mismatches on each side.
"""
import glob
import os
import re
import statistics
import sys

DTYPES = ("bf16", "fp16", "fp32")


def read(path):
    """{(dtype, mode, rows, H, table): (single_us, table_us, ratio)} and the mismatch count."""
    rows, mismatches = {}, 0
    with open(path) as f:
        for line in f:
            if line.startswith("#") and "mismatches" in line:
                mismatches += int(line.split()[1])
                continue
            tok = line.split()
            if len(tok) < 8 or tok[0] not in DTYPES:
                continue
            key = (tok[0], tok[1], int(tok[2]), int(tok[3]), " ".join(tok[5:-2]))
            rows[key] = (float(tok[4]), float(tok[-2]), float(tok[-1]))
    return rows, mismatches


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    runs = {"before": [], "after": []}
    mismatches = {"before": 0, "after": 0}
    for path in sorted(glob.glob(os.path.join(sys.argv[1], "batched-*-*.log"))):
        match = re.fullmatch(r"batched-(before|after)-\d+\.log", os.path.basename(path))
        if match is None:
            continue
        rows, bad = read(path)
        runs[match.group(1)].append(rows)
        mismatches[match.group(1)] += bad
    if not runs["before"] or not runs["after"]:
        print("no logs of one side in", sys.argv[1], file=sys.stderr)
        return 1

    def median(side, key, field):
        values = [run[key][field] for run in runs[side] if key in run]
        return statistics.median(values) if values else None

    keys = sorted(set().union(*runs["before"]) & set().union(*runs["after"]))
    print(f"rounds: {len(runs['before'])} before, {len(runs['after'])} after (medians)")
    print(f"{'dtype':5} {'mode':5} {'rows':>7} {'H':>6} {'table':27} {'single us':>17} "
          f"{'table us':>17} {'ratio':>15}")
    for key in keys:
        single = (median("before", key, 0), median("after", key, 0))
        table = (median("before", key, 1), median("after", key, 1))
        ratio = (median("before", key, 2), median("after", key, 2))
        print(f"{key[0]:5} {key[1]:5} {key[2]:7} {key[3]:6} {key[4]:27} "
              f"{single[0]:8.2f}→{single[1]:<8.2f} {table[0]:8.2f}→{table[1]:<8.2f} "
              f"{ratio[0]:.3f} → {ratio[1]:.3f}")
    print(f"reference mismatches: before {mismatches['before']}, after {mismatches['after']}")
    return 0 if mismatches["after"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
