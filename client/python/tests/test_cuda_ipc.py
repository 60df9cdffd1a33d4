"""transport="cuda-ipc": torch CUDA tensors registered as CUDA regions of a normd --backend=cuda
--shared-memory=system,cuda; the kernel runs on them in place and the outputs stay on the GPU.
Runs on a GPU machine (tests/run_gpu.sh); skips elsewhere, saying why."""

import numpy as np
import pytest

import normd
import normd_server
from normd_server import NormdServer
from reference import assert_close, rms_norm_reference

torch = pytest.importorskip("torch", reason="torch is not installed")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device visible to torch"),
    pytest.mark.skipif(normd_server.test_backend() != "cuda",
                       reason="CUDA regions need normd --backend=cuda (NORMD_TEST_BACKEND=cuda)"),
]


@pytest.fixture(scope="module")
def ipc_server():
    with NormdServer("--shared-memory=system,cuda") as s:
        yield s


@pytest.fixture(scope="module")
def ipc_client(ipc_server):
    with normd.Client(ipc_server.address, transport="cuda-ipc") as c:
        yield c


def _cuda_requests(server) -> float:
    return server.metric("normd_requests_by_transport_total", transport="cuda")


def cpu64(tensor):
    return tensor.detach().cpu().double().numpy()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16],
                         ids=["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("residual", [False, True], ids=["plain", "residual"])
@pytest.mark.parametrize("shape", [(1, 4096), (19, 111), (4096, 4096)],
                         ids=lambda s: "x".join(map(str, s)))
def test_cuda_regions(ipc_server, ipc_client, dtype, residual, shape):
    generator = torch.Generator().manual_seed(5)
    x = (torch.randn(shape, generator=generator) * 3).to(dtype).cuda()
    w = (torch.rand(shape[-1], generator=generator) + 0.5).to(dtype).cuda()
    r = torch.randn(shape, generator=generator).to(dtype).cuda() if residual else None
    before = _cuda_requests(ipc_server)
    assert ipc_client.transport_for(x) == "cuda-ipc"
    result = ipc_client.rms_norm(x, w, eps=1e-5, residual=r, weight_offset=1.0)
    assert _cuda_requests(ipc_server) == before + 1
    y, h = result if residual else (result, None)
    for out in (y, h) if residual else (y,):
        assert out.is_cuda and out.device == x.device and out.dtype == dtype
        assert out.shape == x.shape
    expected_y, expected_h = rms_norm_reference(cpu64(x), cpu64(w), 1e-5,
                                                cpu64(r) if residual else None, 1.0)
    name = str(dtype).replace("torch.", "")
    assert_close(cpu64(y), expected_y, name)
    if residual:
        assert_close(cpu64(h), expected_h, name, "residual_out")


def test_a_view_with_an_offset_in_its_storage(ipc_client):
    """A tensor that starts inside its allocation: the reference's offset must be honoured."""
    base = torch.randn(64, 512, device="cuda")
    x = base[17:33]
    w = torch.ones(512, device="cuda")
    y = ipc_client.rms_norm(x, w)
    assert_close(cpu64(y), rms_norm_reference(cpu64(x), np.ones(512), 1e-6)[0], "float32")


def test_calls_leave_no_regions(ipc_server, ipc_client):
    x = torch.randn(8, 1024, device="cuda").half()
    w = torch.ones(1024, device="cuda").half()
    ipc_client.rms_norm(x, w)
    assert ipc_server.metric("normd_shared_memory_regions", kind="cuda") == 0


def test_auto_picks_cuda_ipc_for_cuda_and_shm_for_host(ipc_server):
    with normd.Client(ipc_server.address) as client:
        assert client.transport_for(torch.ones(2, 8, device="cuda")) == "cuda-ipc"
        assert client.transport_for(torch.ones(2, 8)) == "shm"


def test_auto_falls_back_to_bytes_without_cuda_regions(client):
    x = torch.randn(4, 256, device="cuda")
    assert client.transport_for(x) == "bytes"  # the session's normd has no --shared-memory
    y = client.rms_norm(x, torch.ones(256, device="cuda"))
    assert y.is_cuda


def test_explicit_cuda_ipc_without_it_raises(server):
    with normd.Client(server.address, transport="cuda-ipc") as c:
        with pytest.raises(normd.TransportUnavailable, match="--shared-memory=cuda"):
            c.rms_norm(torch.ones(2, 64, device="cuda"), torch.ones(64, device="cuda"))
