"""Many calls at once: streams (answers in order), asyncio, and threads sharing one client."""

import asyncio
import concurrent.futures

import numpy as np
import pytest

import normd
from reference import assert_close, rms_norm_reference

HIDDEN = 256


def inputs(count, seed):
    rng = np.random.default_rng(seed)
    # Each request's rows differ in scale, so that an answer given to the wrong request shows.
    return [(rng.standard_normal((1 + i % 3, HIDDEN)) * (1 + i)).astype(np.float32)
            for i in range(count)], rng.uniform(0.5, 1.5, HIDDEN).astype(np.float32)


def check(x, w, y, residual=None, h=None):
    expected_y, expected_h = rms_norm_reference(
        x.astype(np.float64), w.astype(np.float64), 1e-6,
        None if residual is None else residual.astype(np.float64))
    assert_close(y.astype(np.float64), expected_y, "float32")
    if h is not None:
        assert_close(h.astype(np.float64), expected_h, "float32", "residual_out")


def test_stream_answers_in_order(client):
    xs, w = inputs(300, seed=1)
    with client.stream() as stream:
        futures = [stream.submit(x, w, request_id=str(i)) for i, x in enumerate(xs)]
        for x, future in zip(xs, futures):
            check(x, w, future.result(timeout=60))


def test_stream_with_residual_and_blocking_calls(client):
    xs, w = inputs(20, seed=2)
    with client.stream() as stream:
        for x in xs:
            y, h = stream.rms_norm(x, w, residual=x)
            check(x, w, y, x, h)


def test_stream_fed_from_threads(client):
    xs, w = inputs(200, seed=3)
    with client.stream(max_in_flight=16) as stream:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            futures = list(pool.map(lambda x: stream.submit(x, w), xs))
        for x, future in zip(xs, futures):
            check(x, w, future.result(timeout=60))


def test_stream_failure_reaches_each_unanswered_future(client):
    xs, w = inputs(3, seed=4)
    with client.stream() as stream:
        good = stream.submit(xs[0], w)
        bad = stream.submit(xs[1], w, eps=-1.0)  # ends the stream with INVALID_ARGUMENT
        check(xs[0], w, good.result(timeout=60))
        with pytest.raises(normd.InvalidArgument, match="eps"):
            bad.result(timeout=60)
        check(xs[2], w, stream.submit(xs[2], w).result(timeout=60))  # on a fresh stream


def test_calls_from_threads_share_one_client(client):
    xs, w = inputs(160, seed=5)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda x: client.rms_norm(x, w), xs))
    for x, y in zip(xs, results):
        check(x, w, y)


def test_asyncio_client(server):
    xs, w = inputs(100, seed=6)

    async def main():
        async with normd.aio.Client(server.address) as client:
            assert await client.health()
            info = await client.server_info()
            assert info.max_request_bytes > 0 and client.max_request_bytes == info.max_request_bytes
            handle = await client.register_weight(w)
            ys = await asyncio.gather(*(client.rms_norm(x, handle) for x in xs))
            y, h = await client.rms_norm(xs[0], w, residual=xs[1][:1].repeat(xs[0].shape[0], 0))
            with pytest.raises(normd.InvalidArgument, match="eps"):
                await client.rms_norm(xs[0], w, eps=-1.0)
            with pytest.raises(normd.DeadlineExceeded):
                await client.rms_norm(np.ones((1024, 4096), np.float32),
                                      np.ones(4096, np.float32), timeout=1e-4)
            async with client.stream() as stream:
                futures = [await stream.submit(x, w) for x in xs]
                streamed = [await f for f in futures]
            return ys, streamed

    ys, streamed = asyncio.run(main())
    for x, y, s in zip(xs, ys, streamed):
        check(x, w, y)
        assert np.array_equal(y, s)


def test_asyncio_stream_failure(server):
    xs, w = inputs(3, seed=7)

    async def main():
        async with normd.aio.Client(server.address) as client:
            async with client.stream() as stream:
                good = await stream.submit(xs[0], w)
                bad = await stream.submit(xs[1], w, eps=-1.0)
                check(xs[0], w, await good)
                with pytest.raises(normd.InvalidArgument, match="eps"):
                    await bad
                check(xs[2], w, await stream.rms_norm(xs[2], w))

    asyncio.run(main())
