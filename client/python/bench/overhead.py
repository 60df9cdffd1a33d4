"""The client's marshalling overhead: normd.Client.rms_norm against a bare grpcio call carrying the
same prepared message to the same normd, over the same connection, at concurrency 1.

    python3 client/python/bench/overhead.py --normd build/cpu/server/normd      # starts one
    python3 client/python/bench/overhead.py --target 127.0.0.1:50051           # or use one

The bare call is what a hand-written grpcio client pays at best: the generated NormalizeRequest,
built once (input bytes, the registered weight's id, eps), sent through a stub with protobuf's
serializer and parser. The client gets the numpy array or torch tensor each time and returns one;
its weight is registered by its first call, so both send the same bytes (checked). The two run
interleaved (--method pairs: call by call; blocks: --calls at a time), so that a busy machine's
moments hit both alike; the median over --rounds rounds of each round's overhead is printed, with
the quartiles of the rounds as the spread.
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
from normd import _channel  # noqa: E402
from normd.v1 import normd_pb2  # noqa: E402


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits, round to nearest even."""
    bits = values.astype(np.float32).view(np.uint32)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def variants(client, hidden: int, rows: int, rng):
    """(name, zero-argument call, the request bytes it sends) for each variant."""
    x32 = rng.standard_normal((rows, hidden)).astype(np.float32)
    w32 = rng.uniform(0.5, 1.5, hidden).astype(np.float32)
    out = []
    inputs = [("numpy float16", x32.astype(np.float16), normd_pb2.DTYPE_FLOAT16,
               lambda a: a.tobytes())]
    try:
        import ml_dtypes

        inputs.append(("numpy bfloat16", x32.astype(ml_dtypes.bfloat16), normd_pb2.DTYPE_BFLOAT16,
                       lambda a: a.tobytes()))
    except ImportError:
        pass
    try:
        import torch

        inputs.append(("torch bfloat16", torch.from_numpy(x32).bfloat16(),
                       normd_pb2.DTYPE_BFLOAT16,
                       lambda t: t.view(torch.int16).numpy().tobytes()))
    except ImportError:
        pass
    weight = client.register_weight(w32)
    bare = client._channel.unary_unary(
        _channel.NORMALIZE, request_serializer=normd_pb2.NormalizeRequest.SerializeToString,
        response_deserializer=normd_pb2.NormalizeResponse.FromString)
    for name, x, dtype, raw in inputs:
        request = normd_pb2.NormalizeRequest(
            input=normd_pb2.Tensor(dtype=dtype, shape=list(x.shape), data=raw(x)),
            weight_id=weight.id, eps=1e-6)
        client.rms_norm(x, w32, eps=1e-6)  # registers w32's cache entry
        sent = client._prepare(x, w32, 1e-6, None, 0.0, "").request()
        assert sent == request.SerializeToString(), f"{name}: the client sends other bytes"
        out.append((name, lambda request=request: bare(request, timeout=30),
                    lambda x=x: client.rms_norm(x, w32, eps=1e-6)))
    return out


def measure(pairs, count: int, rounds: int, method: str):
    """For each (name, bare call, client call), `rounds` rounds; returns per round the median bare
    latency, the median client latency and the overhead, in microseconds.

    pairs: `count` pairs of calls taken alternately (which goes first alternates too), so that
    both see the same moments of a busy machine; the overhead is the median of the pairs'
    differences. blocks: `count` bare calls, then `count` client calls (the order alternates by
    round), each variant warm from its own previous call as in a loop of it alone; the overhead is
    the difference of the two medians."""
    results = {name: [] for name, _, _ in pairs}
    for _, bare, ours in pairs:  # warm-up
        for _ in range(count // 4 + 1):
            bare()
            ours()
    clock = time.perf_counter_ns

    def block(call):
        samples = []
        for _ in range(count):
            start = clock()
            call()
            samples.append(clock() - start)
        return samples

    for r in range(rounds):
        for name, bare, ours in pairs:
            if method == "blocks":
                if r % 2 == 0:
                    bare_ns, ours_ns = block(bare), block(ours)
                else:
                    ours_ns, bare_ns = block(ours), block(bare)
                overhead = statistics.median(ours_ns) - statistics.median(bare_ns)
            else:
                bare_ns, ours_ns = [], []
                for i in range(count):
                    first, second = (bare, ours) if i % 2 == 0 else (ours, bare)
                    start = clock()
                    first()
                    middle = clock()
                    second()
                    end = clock()
                    a, b = middle - start, end - middle
                    bare_ns.append(a if i % 2 == 0 else b)
                    ours_ns.append(b if i % 2 == 0 else a)
                overhead = statistics.median(o - b for o, b in zip(ours_ns, bare_ns))
            results[name].append((statistics.median(bare_ns) / 1000,
                                  statistics.median(ours_ns) / 1000, overhead / 1000))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--target", help="a running normd")
    where.add_argument("--normd", help="a normd binary to start on loopback")
    parser.add_argument("--backend", default="cpu", help="with --normd (default cpu)")
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--calls", type=int, default=300, help="calls per round")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--method", choices=["pairs", "blocks"], default="pairs",
                        help="how bare and client calls are interleaved (see measure())")
    args = parser.parse_args()

    server = None
    if args.normd:
        os.environ["NORMD_BINARY"] = args.normd
        os.environ["NORMD_TEST_BACKEND"] = args.backend
        from normd_server import NormdServer

        server = NormdServer().start()
        target = server.address
    else:
        target = args.target
    try:
        with normd.Client(target) as client:
            pairs = variants(client, args.hidden, args.rows, np.random.default_rng(0))
            results = measure(pairs, args.calls, args.rounds, args.method)
            info = client.server_info()
    finally:
        if server is not None:
            server.stop()
    import grpc

    print(f"normd {info.version} backend={info.backend} at {target}; {args.rows}x{args.hidden}, "
          f"concurrency 1, {args.method}, {args.rounds} rounds x {args.calls} calls; Python "
          f"{sys.version.split()[0]}, grpcio {grpc.__version__}, numpy {np.__version__}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'input':18} {'bare p50':>9} {'client p50':>11} {'overhead':>9} "
          f"{'(q1 .. q3 of rounds)':>22}  us")
    for name, rounds in results.items():
        bare = statistics.median(r[0] for r in rounds)
        ours = statistics.median(r[1] for r in rounds)
        overheads = [r[2] for r in rounds]
        q1, median, q3 = (statistics.quantiles(overheads, n=4) if len(overheads) > 1
                          else overheads * 3)
        print(f"{name:18} {bare:9.1f} {ours:11.1f} {median:+9.1f}   ({q1:+7.1f} .. {q3:+7.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
