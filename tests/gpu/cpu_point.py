#!/usr/bin/env python3
"""Where the machine's CPU goes during one normbench point against one server.

Runs the normbench command given after `--` (one server, no --baseline), and from /proc before and
after it reports: the machine's busy cores (all of /proc/stat's non-idle time over the wall time), the
server's cores split by thread name (normd names its own threads normd-worker, normd-copy,
normd-reply, normd-cpu-pool; gRPC's threads keep gRPC's names or the process's), everything else on
the machine (normbench, mostly), and each of them in CPU microseconds per request at the throughput
normbench reports. Warm-up load is inside the window, at the same rate, so cores and per-request
figures stay comparable.

Usage: cpu_point.py --pid SERVER_PID --label NAME -- normbench --target=... --concurrency=64 ...
"""
import argparse
import os
import re
import subprocess
import sys
import time
from collections import defaultdict

TICKS = os.sysconf("SC_CLK_TCK")


def machine_ticks():
    """(busy, total) clock ticks of all CPUs from /proc/stat's first line."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    total = sum(fields[:8])  # user nice system idle iowait irq softirq steal
    return total - idle, total


def thread_ticks(pid):
    """{thread name: user + system ticks} over the process's threads."""
    by_name = defaultdict(int)
    task_dir = f"/proc/{pid}/task"
    for tid in os.listdir(task_dir):
        try:
            with open(f"{task_dir}/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # the thread ended meanwhile
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        rest = stat[stat.rindex(")") + 2 :].split()
        # Thread names ending in digits (gRPC numbers some) are grouped.
        by_name[re.sub(r"[\d_-]+$", "", name) or name] += int(rest[11]) + int(rest[12])
    return by_name


def target_throughput(output):
    """Requests per second of normbench's `target` row (its 8th column)."""
    for line in output.splitlines():
        if line.startswith("target"):
            return float(line.split()[7])
    return 0.0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--label", required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    busy0, total0 = machine_ticks()
    threads0 = thread_ticks(args.pid)
    wall0 = time.monotonic()
    run = subprocess.run(command, capture_output=True, text=True)
    wall = time.monotonic() - wall0
    busy1, total1 = machine_ticks()
    threads1 = thread_ticks(args.pid)
    sys.stdout.write(run.stdout[-600:])
    rps = target_throughput(run.stdout)
    cpus = os.cpu_count() or 1
    machine_cores = (busy1 - busy0) / max(1, total1 - total0) * cpus
    server = {name: (threads1[name] - threads0.get(name, 0)) / TICKS / wall for name in threads1}
    server_cores = sum(server.values())
    per_request = (lambda cores: cores / rps * 1e6) if rps > 0 else (lambda cores: float("nan"))
    print(f"cpu {args.label}: {rps:.0f} requests/s; machine busy {machine_cores:.2f} of {cpus} cores; "
          f"server {server_cores:.2f} cores = {per_request(server_cores):.1f} us/request; "
          f"rest of the machine {machine_cores - server_cores:.2f} cores = "
          f"{per_request(machine_cores - server_cores):.1f} us/request")
    for name, cores in sorted(server.items(), key=lambda kv: -kv[1]):
        if cores >= 0.005:
            print(f"  thread {name:16s} {cores:5.2f} cores  {per_request(cores):7.1f} us/request")
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
