"""A 4096x4096 bf16 torch CPU tensor through transport="shm" and "bytes", side by side, at
concurrency 1: the round trip of normd.Client.rms_norm, interleaved call by call so that a busy
machine's moments hit both alike. Prints each transport's median and quartiles over --calls calls
and the bytes each way per second (32 MiB in and 32 MiB out per call).

    python3 client/python/bench/transports.py --normd build/ci/server/normd   # starts one
    python3 client/python/bench/transports.py --target 127.0.0.1:50051       # or use one
                                                       # (started with --shared-memory=system)
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import normd  # noqa: E402


def measure(target: str, rows: int, hidden: int, calls: int) -> None:
    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.standard_normal((rows, hidden)).astype(np.float32)).bfloat16()
    w = torch.from_numpy(rng.uniform(0.5, 1.5, hidden).astype(np.float32)).bfloat16()
    clients = {name: normd.Client(target, transport=name, timeout=120)
               for name in ("shm", "bytes")}
    times = {name: [] for name in clients}
    for client in clients.values():
        client.rms_norm(x, w)  # warm: connection, weight registration, region
    for _ in range(calls):
        for name, client in clients.items():
            start = time.perf_counter()
            client.rms_norm(x, w)
            times[name].append(time.perf_counter() - start)
    nbytes = x.numel() * x.element_size()
    print(f"{rows}x{hidden} bf16 torch CPU, c=1, {calls} calls each, interleaved")
    for name, samples in times.items():
        q1, median, q3 = statistics.quantiles(samples, n=4)
        print(f"  {name:5s} p50 {median * 1e3:8.2f} ms  (q1 {q1 * 1e3:.2f}, q3 {q3 * 1e3:.2f})  "
              f"{nbytes / median / 1e9:6.2f} GB/s each way")
    for client in clients.values():
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", help="a running normd (with --shared-memory=system)")
    parser.add_argument("--normd", help="a normd binary to start on the CPU backend")
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    if args.target:
        measure(args.target, args.rows, args.hidden, args.calls)
        return
    if not args.normd:
        parser.error("give --target or --normd")
    os.environ["NORMD_BINARY"] = args.normd
    from normd_server import NormdServer

    with NormdServer("--shared-memory=system") as server:
        measure(server.address, args.rows, args.hidden, args.calls)


if __name__ == "__main__":
    main()
