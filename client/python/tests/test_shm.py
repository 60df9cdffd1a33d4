"""transport="shm": host tensors through system shared-memory regions, against a normd started
with --shared-memory=system. Each test checks that the regions were really used (normd's
requests-by-transport counter), not the bytes path."""

import os
import threading
import time

import numpy as np
import pytest

import normd
from normd_server import NormdServer
from reference import assert_close, rms_norm_reference
from tensors import DTYPES, KINDS, dtype_name, make, random_values, random_weight, to64

_SHM_DIR = "/dev/shm"


def _our_shm_files():
    prefix = f"normd-py-{os.getpid()}-"
    return [n for n in os.listdir(_SHM_DIR) if n.startswith(prefix)]


@pytest.fixture(scope="module")
def shm_server():
    with NormdServer("--shared-memory=system") as s:
        yield s


@pytest.fixture(scope="module")
def shm_client(shm_server):
    with normd.Client(shm_server.address, transport="shm") as c:
        yield c


def _system_requests(server) -> float:
    return server.metric("normd_requests_by_transport_total", transport="system")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("with_residual", [False, True])
def test_values_through_regions(shm_server, shm_client, kind, dtype, with_residual):
    rng = np.random.default_rng(7)
    x = make(kind, dtype, random_values(rng, (5, 384)))
    w = make(kind, dtype, random_weight(rng, 384))
    r = make(kind, dtype, random_values(rng, (5, 384))) if with_residual else None
    before = _system_requests(shm_server)
    assert shm_client.transport_for(x) == "shm"
    result = shm_client.rms_norm(x, w, eps=1e-5, residual=r, weight_offset=1.0)
    assert _system_requests(shm_server) == before + 1
    y, h = result if with_residual else (result, None)
    assert type(y) is type(x) and dtype_name(y) == dtype and tuple(y.shape) == (5, 384)
    y64, h64 = rms_norm_reference(to64(x), to64(w), 1e-5, to64(r) if r is not None else None,
                                  weight_offset=1.0)
    if with_residual:
        assert_close(to64(h), h64, dtype, "h")
    assert_close(to64(y), y64, dtype)


def test_32_mib_tensors(shm_server, shm_client):
    torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")
    rng = np.random.default_rng(3)
    x = make("torch", "bfloat16", random_values(rng, (4096, 4096)))
    r = make("torch", "bfloat16", random_values(rng, (4096, 4096)))
    w = make("torch", "bfloat16", random_weight(rng, 4096))
    assert x.numel() * x.element_size() == 32 << 20
    before = _system_requests(shm_server)
    y, h = shm_client.rms_norm(x, w, eps=1e-6, residual=r)
    assert _system_requests(shm_server) == before + 1
    assert y.dtype == torch.bfloat16 and y.shape == x.shape
    y64, _ = rms_norm_reference(to64(x), to64(w), 1e-6, to64(r))
    assert_close(to64(y), y64, "bfloat16")
    assert torch.equal(h, (x.float() + r.float()).to(torch.bfloat16))


def test_concurrent_calls_from_threads(shm_server):
    rng = np.random.default_rng(11)
    w = random_weight(rng, 256)
    inputs = [random_values(rng, (3 + i % 4, 256), scale=1 + i) for i in range(48)]
    results = [None] * len(inputs)
    errors = []
    before = _system_requests(shm_server)
    with normd.Client(shm_server.address, transport="shm") as client:
        def work(first):
            try:
                for i in range(first, len(inputs), 6):
                    results[i] = client.rms_norm(inputs[i], w, eps=1e-6)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors
    assert _system_requests(shm_server) == before + len(inputs)
    for x, y in zip(inputs, results):  # each answer is its own input's, never another thread's
        y64, _ = rms_norm_reference(x.astype(np.float64), w.astype(np.float64), 1e-6)
        assert_close(y.astype(np.float64), y64, "float32")


def _regions(server) -> float:
    return server.metric("normd_shared_memory_regions", kind="system")


def test_regions_grow_and_are_reused(shm_server):
    w = np.ones(1024, np.float32)
    before = _regions(shm_server)
    with normd.Client(shm_server.address, transport="shm") as client:
        for rows in (1, 1, 2048, 2048, 4):  # the 8 MiB call needs a bigger region; then reuse
            y = client.rms_norm(np.full((rows, 1024), 2.0, np.float32), w)
            assert np.allclose(y, 1.0, atol=1e-5)
        assert _regions(shm_server) == before + 1  # grown by replacing, not by adding
    assert _regions(shm_server) == before


def _wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)  # polling normd's gauges, not timing a result
    return True


def test_close_unregisters_and_leaves_nothing(shm_server):
    assert not _our_shm_files()
    regions = _regions(shm_server)
    sessions = shm_server.metric("normd_shared_memory_sessions")
    client = normd.Client(shm_server.address, transport="shm")
    client.rms_norm(np.ones((2, 64), np.float32), np.ones(64, np.float32))
    assert _regions(shm_server) == regions + 1
    assert shm_server.metric("normd_shared_memory_sessions") == sessions + 1
    assert not _our_shm_files()  # unlinked once registered: normd holds the mapping
    client.close()
    assert _regions(shm_server) == regions  # unregistered by close(), before it returns
    assert _wait_for(lambda: shm_server.metric("normd_shared_memory_sessions") == sessions)
    assert not _our_shm_files()


def test_auto_uses_regions_on_the_same_host(shm_server):
    x = np.ones((2, 32), np.float16)
    with normd.Client(shm_server.address) as client:
        assert client.transport_for(x) == "shm"
        before = _system_requests(shm_server)
        assert np.allclose(client.rms_norm(x, np.ones(32, np.float16)), 1.0, atol=1e-3)
        assert _system_requests(shm_server) == before + 1


def test_auto_falls_back_to_bytes_without_regions(server):
    x = np.ones((2, 32), np.float32)
    with normd.Client(server.address) as client:
        for _ in range(3):  # decided once; every call works
            assert client.transport_for(x) == "bytes"
            assert np.allclose(client.rms_norm(x, np.ones(32, np.float32)), 1.0, atol=1e-5)
        assert server.metric("normd_requests_by_transport_total", transport="system") == 0


def test_explicit_shm_without_regions_raises(server):
    with normd.Client(server.address, transport="shm") as client:
        with pytest.raises(normd.TransportUnavailable, match="--shared-memory=system") as info:
            client.rms_norm(np.ones((2, 32), np.float32), np.ones(32, np.float32))
        assert isinstance(info.value, normd.FailedPrecondition)
