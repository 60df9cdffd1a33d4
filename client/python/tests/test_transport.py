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


def test_pytorch_cuda_exports_unwrap_to_the_64_byte_handle():
    # No GPU needed: the forms PyTorch's caching allocator exports a block in.
    from normd._cuda_ipc import cuda_ipc_mem_handle
    handle = bytes(range(64))
    assert cuda_ipc_mem_handle(handle) == handle  # PyTorch before 2.2: the bare handle
    for version in (2, 3):
        assert cuda_ipc_mem_handle(bytes([version]) + b"c" + handle) == handle
    with pytest.raises(ValueError, match="expandable_segments"):
        cuda_ipc_mem_handle(b"\x02e" + bytes(40))
    with pytest.raises(ValueError, match="a 10-byte handle"):
        cuda_ipc_mem_handle(bytes(10))
