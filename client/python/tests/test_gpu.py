"""torch CUDA tensors through normd --backend=cuda (tests/run_gpu.sh runs these on a GPU machine).
The result stays on the input's GPU; values are checked against the fp64 reference on the CPU."""

import numpy as np
import pytest

from reference import assert_close, rms_norm_reference

torch = pytest.importorskip("torch", reason="torch is not installed")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device visible to torch"),
]


@pytest.fixture(scope="module")
def cuda_client(client):
    backend = client.server_info().backend
    if backend != "cuda":
        pytest.skip(f"normd runs the {backend} backend; these tests want --backend=cuda "
                    "(NORMD_TEST_BACKEND=cuda)")
    return client


def cpu64(tensor):
    return tensor.detach().cpu().double().numpy()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16],
                         ids=["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("residual", [False, True], ids=["plain", "residual"])
@pytest.mark.parametrize("shape", [(1, 4096), (19, 111), (64, 8192), (3, 5, 5120)],
                         ids=lambda s: "x".join(map(str, s)))
def test_cuda_tensors(cuda_client, dtype, residual, shape):
    generator = torch.Generator().manual_seed(hash(shape) % 1000)
    x = (torch.randn(shape, generator=generator) * 3).to(dtype).cuda()
    w = (torch.rand(shape[-1], generator=generator) + 0.5).to(dtype).cuda()
    r = torch.randn(shape, generator=generator).to(dtype).cuda() if residual else None
    result = cuda_client.rms_norm(x, w, eps=1e-5, residual=r, weight_offset=1.0)
    y, h = result if residual else (result, None)
    name = str(dtype).replace("torch.", "")
    expected_y, expected_h = rms_norm_reference(cpu64(x), cpu64(w), 1e-5,
                                                cpu64(r) if residual else None, 1.0)
    for out in (y, h) if residual else (y,):
        assert out.is_cuda and out.device == x.device and out.dtype == dtype
        assert out.shape == x.shape
    assert_close(cpu64(y), expected_y, name)
    if residual:
        assert_close(cpu64(h), expected_h, name, "residual_out")


def test_32_mib_bfloat16_on_the_gpu(cuda_client):
    x = torch.randn(4096, 4096, device="cuda").bfloat16()
    w = (torch.rand(4096, device="cuda") + 0.5).bfloat16()
    y = cuda_client.rms_norm(x, w)
    assert y.is_cuda and y.dtype == torch.bfloat16
    assert_close(cpu64(y), rms_norm_reference(cpu64(x), cpu64(w), 1e-6)[0], "bfloat16")


def test_cuda_weight_changed_in_place(cuda_client):
    x = torch.randn(4, 1024, device="cuda")
    w = torch.ones(1024, device="cuda")
    first = cuda_client.rms_norm(x, w)
    w.mul_(2.0)  # bumps the version counter: the cached registration no longer applies
    assert torch.allclose(cuda_client.rms_norm(x, w), 2.0 * first, rtol=1e-5, atol=1e-5)


def test_rmsnorm_module_on_the_gpu(cuda_client):
    from normd.torch import RMSNorm

    norm = RMSNorm(2048, eps=1e-6, client=cuda_client, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(8, 2048, device="cuda").bfloat16()
    with torch.inference_mode():
        y = norm(x)
    assert y.is_cuda
    assert_close(cpu64(y), rms_norm_reference(cpu64(x), np.ones(2048), 1e-6)[0], "bfloat16")
