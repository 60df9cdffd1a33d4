"""Where normd.Client.rms_norm's time over a bare call goes: the client's Python steps timed alone,
and calls that send the same prepared bytes with some of those steps around them, at concurrency 1.

    python3 client/python/bench/overhead_parts.py --normd build/cpu/server/normd [--backend cuda]

Each variant is timed call by call, the variants taken in a rotating order so that each follows
every other; the median over --rounds rounds of each round's median is printed against the bare
call (the client's own method object sending prebuilt request bytes):
  steps+bare       the client's preparation, then the prebuilt bytes sent, then its output parsing
  client           normd.Client.rms_norm itself
  (work)+bare      some Python work done before the bare call, outside its timing: how much that
                   work slows the gRPC call that follows it (a 5 us busy loop as the control)
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import normd  # noqa: E402
from normd._tensors import to_host  # noqa: E402

clock = time.perf_counter_ns


def time_alone(step, count: int = 20000) -> float:
    for _ in range(count // 10):
        step()
    start = clock()
    for _ in range(count):
        step()
    return (clock() - start) / count / 1000


def spin(microseconds: float) -> None:
    end = clock() + microseconds * 1000
    while clock() < end:
        pass


def measure(client, x, weight, rounds: int, calls: int):
    normalize, wait_for_ready = client._normalize, client._wait_for_ready
    prepared = client._prepare(x, weight, 1e-6, None, 0.0, "")
    request = prepared.request()
    prepared.attached.release()

    def bare():
        return normalize(request, timeout=30.0, wait_for_ready=wait_for_ready)

    def steps_and_bare():
        call = client._prepare(x, weight, 1e-6, None, 0.0, "")
        call.request()
        call.attached.outputs(bare())
        call.attached.release()

    def prepare():
        client._prepare(x, weight, 1e-6, None, 0.0, "").attached.release()

    timed = {"bare": bare, "steps+bare": steps_and_bare,
             "client": lambda: client.rms_norm(x, weight, eps=1e-6)}
    before = {"(preparation)+bare": prepare, "(input to host)+bare": lambda: to_host(x, "input"),
              "(5 us busy loop)+bare": lambda: spin(5)}
    variants = [(name, None, call) for name, call in timed.items()]
    variants += [(name, work, bare) for name, work in before.items()]
    for _, work, call in variants:
        for _ in range(calls // 2):
            if work:
                work()
            call()
    per_round = {name: [] for name, _, _ in variants}
    for r in range(rounds):
        samples = {name: [] for name, _, _ in variants}
        for i in range(calls):
            first = (i * 7 + r) % len(variants)
            for j in range(len(variants)):
                name, work, call = variants[(first + j) % len(variants)]
                if work:
                    work()
                start = clock()
                call()
                samples[name].append(clock() - start)
        for name in samples:
            per_round[name].append(statistics.median(samples[name]) / 1000)
    response = bare()
    alone = {
        "preparation alone": time_alone(
            lambda: client._prepare(x, weight, 1e-6, None, 0.0, "").request()),
        "preparation + output alone": time_alone(
            lambda: client._prepare(x, weight, 1e-6, None, 0.0, "").attached.outputs(response)),
    }
    return {name: statistics.median(values) for name, values in per_round.items()}, alone


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--normd", required=True, help="a normd binary to start on loopback")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=300, help="calls of each variant per round")
    args = parser.parse_args()
    os.environ["NORMD_BINARY"] = args.normd
    os.environ["NORMD_TEST_BACKEND"] = args.backend
    from normd_server import NormdServer

    import grpc

    rng = np.random.default_rng(0)
    x32 = rng.standard_normal((1, 4096)).astype(np.float32)
    weight = rng.uniform(0.5, 1.5, 4096).astype(np.float32)
    inputs = [("numpy float16", x32.astype(np.float16))]
    try:
        import torch

        inputs.append(("torch bfloat16", torch.from_numpy(x32).bfloat16()))
    except ImportError:
        pass
    server = NormdServer().start()
    try:
        with normd.Client(server.address, transport="bytes") as client:
            print(f"1x4096, concurrency 1, {args.rounds} rounds x {args.calls} calls; Python "
                  f"{sys.version.split()[0]}, grpcio {grpc.__version__}, normd --backend="
                  f"{args.backend}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
            for name, x in inputs:
                client.rms_norm(x, weight, eps=1e-6)  # registers the weight
                medians, alone = measure(client, x, weight, args.rounds, args.calls)
                print(f"== {name}: p50 us, and against the bare call")
                for variant, value in medians.items():
                    print(f"  {variant:26} {value:8.1f} {value - medians['bare']:+8.1f}")
                for step, value in alone.items():
                    print(f"  {step:26} {value:8.2f}")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
