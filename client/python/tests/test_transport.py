"""Transport choice: "auto" and "bytes" carry every input to a normd without regions; unknown
names are refused (the shm transport's own tests: test_shm.py)."""

import numpy as np
import pytest

import normd


def test_auto_and_bytes(server):
    x = np.ones((2, 16), np.float32)
    for name in ("auto", "bytes"):
        with normd.Client(server.address, transport=name) as client:
            assert client.transport_for(x) == "bytes"
            assert np.allclose(client.rms_norm(x, np.ones(16, np.float32)), 1.0, atol=1e-5)
    assert normd.available_transports() == ["auto", "bytes", "shm", "cuda-ipc"]


@pytest.mark.parametrize("name", ["cuda_ipc", "", "SHM"])
def test_unknown_transport_is_refused(name):
    with pytest.raises(ValueError, match="auto, bytes, shm, cuda-ipc"):
        normd.Client("127.0.0.1:1", transport=name)


def test_explicit_cuda_ipc_refuses_host_tensors(server):
    with normd.Client(server.address, transport="cuda-ipc") as client:
        with pytest.raises(ValueError, match="cuda-ipc' cannot carry this input"):
            client.rms_norm(np.ones((2, 16), np.float32), np.ones(16, np.float32))
