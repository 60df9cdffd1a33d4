"""32 MiB tensors: past grpcio's default 4 MiB receive limit, as numpy and torch, with residuals."""

import numpy as np
import pytest

from reference import assert_close, rms_norm_reference


def test_numpy_float32_32_mib_with_residual(client):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2048, 4096), dtype=np.float32)  # 32 MiB
    r = rng.standard_normal((2048, 4096), dtype=np.float32)
    w = rng.uniform(0.5, 1.5, 4096).astype(np.float32)
    y, h = client.rms_norm(x, w, residual=r)
    expected_y, expected_h = rms_norm_reference(x.astype(np.float64), w.astype(np.float64), 1e-6,
                                                r.astype(np.float64))
    assert_close(y.astype(np.float64), expected_y, "float32")
    assert_close(h.astype(np.float64), expected_h, "float32", "residual_out")


def test_torch_bfloat16_4096_by_4096(client):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    generator = torch.Generator().manual_seed(2)
    x = torch.randn(4096, 4096, generator=generator).bfloat16()  # 32 MiB
    w = (torch.rand(4096, generator=generator) + 0.5).bfloat16()
    y = client.rms_norm(x, w)
    assert y.dtype == torch.bfloat16 and y.shape == x.shape
    expected, _ = rms_norm_reference(x.double().numpy(), w.double().numpy(), 1e-6)
    assert_close(y.double().numpy(), expected, "bfloat16")
