"""Weights sent by id after their first use: registered once, re-registered after an eviction,
changed in place, and streams that meet an evicted weight."""

import numpy as np
import pytest

import normd
from normd_server import NormdServer
from reference import assert_close, rms_norm_reference

HIDDEN = 4096  # a float32 weight of 16 KiB


def registrations(server) -> float:
    return server.metric("normd_requests_total", method="RegisterWeight", code="OK")


def by_id_not_found(server) -> float:
    return server.metric("normd_requests_total", method="Normalize", code="NOT_FOUND")


def expected(x, w):
    return rms_norm_reference(x.astype(np.float64), w.astype(np.float64), 1e-6)[0]


@pytest.fixture()
def small_registry():
    # Room for one 16 KiB weight: registering a second evicts the first.
    with NormdServer(f"--max-weight-bytes={HIDDEN * 4}") as server:
        yield server


def test_registered_once_then_sent_by_id(small_registry):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, HIDDEN)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, HIDDEN).astype(np.float32)
    with normd.Client(small_registry.address) as client:
        for _ in range(5):
            assert_close(client.rms_norm(x, w).astype(np.float64), expected(x, w), "float32")
        # A fresh array of the same values reuses the registration (looked up by content).
        client.rms_norm(x, w.copy())
    assert registrations(small_registry) == 1


def test_evicted_weight_is_registered_again(small_registry):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, HIDDEN)).astype(np.float32)
    a = rng.uniform(0.5, 1.5, HIDDEN).astype(np.float32)
    b = rng.uniform(0.5, 1.5, HIDDEN).astype(np.float32)
    with normd.Client(small_registry.address) as client:
        handle = client.register_weight(a)
        client.rms_norm(x, b)  # registers b, which evicts a
        assert registrations(small_registry) == 2
        for weight in (a, handle):  # the cached array, then the explicit handle
            assert_close(client.rms_norm(x, weight).astype(np.float64), expected(x, a),
                         "float32")
            client.rms_norm(x, b)  # b was evicted by a: registered again, evicting a
    # Each round: a's call meets NOT_FOUND and registers a, then b's does the same.
    assert by_id_not_found(small_registry) == 4
    assert registrations(small_registry) == 2 + 4


def test_stream_requests_survive_an_eviction(small_registry):
    rng = np.random.default_rng(3)
    a = rng.uniform(0.5, 1.5, HIDDEN).astype(np.float32)
    b = rng.uniform(0.5, 1.5, HIDDEN).astype(np.float32)
    xs = [rng.standard_normal((1, HIDDEN)).astype(np.float32) for _ in range(8)]
    with normd.Client(small_registry.address) as client:
        client.rms_norm(xs[0], a)
        client.rms_norm(xs[0], b)  # evicts a
        with client.stream() as stream:
            futures = [stream.submit(x, a) for x in xs]
            results = [f.result(timeout=60) for f in futures]
    for x, y in zip(xs, results):
        assert_close(y.astype(np.float64), expected(x, a), "float32")
    assert by_id_not_found(small_registry) >= 1


def test_a_weight_changed_in_place_is_sent_anew(server, client):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 256)).astype(np.float32)
    w = np.ones(256, np.float32)
    client.rms_norm(x, w)
    w *= 2.0
    assert_close(client.rms_norm(x, w).astype(np.float64), expected(x, w), "float32")


def test_a_torch_weight_changed_in_place_is_sent_anew(client):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    x = torch.randn(2, 256)
    w = torch.ones(256)
    y1 = client.rms_norm(x, w)
    with torch.no_grad():
        w.mul_(3.0)
    assert torch.allclose(client.rms_norm(x, w), 3.0 * y1, rtol=1e-6, atol=1e-6)


def test_inline_weights_without_the_cache(server):
    before = registrations(server)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 512)).astype(np.float16)
    w = rng.uniform(0.5, 1.5, 512).astype(np.float32)
    with normd.Client(server.address, cache_weights=False) as client:
        for _ in range(3):
            y = client.rms_norm(x, w)
    assert registrations(server) == before
    assert_close(y.astype(np.float64), expected(x, w), "float16")


def test_asyncio_calls_and_streams_survive_an_eviction(small_registry):
    import asyncio

    rng = np.random.default_rng(6)
    a = rng.uniform(0.5, 1.5, HIDDEN).astype(np.float32)
    b = rng.uniform(0.5, 1.5, HIDDEN).astype(np.float32)
    xs = [rng.standard_normal((1, HIDDEN)).astype(np.float32) for _ in range(6)]

    async def main():
        async with normd.aio.Client(small_registry.address) as client:
            await client.rms_norm(xs[0], a)
            await client.rms_norm(xs[0], b)  # evicts a
            unary = await client.rms_norm(xs[0], a)  # NOT_FOUND, registered again
            await client.rms_norm(xs[0], b)  # evicts a again
            async with client.stream() as stream:
                futures = [await stream.submit(x, a) for x in xs]
                return unary, [await f for f in futures]

    unary, streamed = asyncio.run(main())
    assert_close(unary.astype(np.float64), expected(xs[0], a), "float32")
    for x, y in zip(xs, streamed):
        assert_close(y.astype(np.float64), expected(x, a), "float32")
    assert by_id_not_found(small_registry) >= 3
