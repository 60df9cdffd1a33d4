"""normd.torch.RMSNorm: a torch module whose forward runs on normd (inference only)."""

import pytest

from reference import assert_close, rms_norm_reference

torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")
from normd.torch import RMSNorm  # noqa: E402


def reference(x, weight, eps, offset=0.0, residual=None):
    r = None if residual is None else residual.double().numpy()
    return rms_norm_reference(x.double().numpy(), weight.double().numpy(), eps, r, offset)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_forward_matches_reference(client, dtype):
    norm = RMSNorm(384, eps=1e-5, client=client, dtype=dtype)
    with torch.no_grad():
        norm.weight.copy_(torch.rand(384) + 0.5)
    x = torch.randn(2, 7, 384).to(dtype)
    with torch.inference_mode():
        y = norm(x)
    assert y.dtype == dtype and y.shape == x.shape
    assert_close(y.double().numpy(), reference(x, norm.weight.detach(), 1e-5)[0],
                 str(dtype).replace("torch.", ""))


def test_default_eps_is_the_dtypes_epsilon_and_residual(client):
    norm = RMSNorm([64], client=client, weight_offset=1.0)
    x, r = torch.randn(3, 64), torch.randn(3, 64)
    with torch.no_grad():
        y, h = norm(x, r)
    eps = torch.finfo(torch.float32).eps
    expected_y, expected_h = reference(x, torch.ones(64), eps, 1.0, r)
    assert_close(y.double().numpy(), expected_y, "float32")
    assert_close(h.double().numpy(), expected_h, "float32", "residual_out")


def test_without_affine_weight(client):
    norm = RMSNorm(32, eps=1e-6, elementwise_affine=False, client=client)
    assert norm.weight is None and len(list(norm.parameters())) == 0
    x = torch.randn(4, 32).half()
    with torch.no_grad():
        y = norm(x)
    assert_close(y.double().numpy(), reference(x, torch.ones(32), 1e-6)[0], "float16")


def test_state_dict_and_weight_changes(client):
    norm = RMSNorm(128, eps=1e-6, client=client)
    x = torch.randn(2, 128)
    with torch.no_grad():
        before = norm(x)
        norm.load_state_dict({"weight": torch.full((128,), 2.0)})
        after = norm(x)
    assert torch.allclose(after, 2.0 * before, rtol=1e-6, atol=1e-6)


def test_from_torch_shares_the_weight(client):
    class TorchRMSNorm(torch.nn.Module):  # what torch.nn.RMSNorm (torch >= 2.4) holds
        def __init__(self):
            super().__init__()
            self.normalized_shape, self.eps = (48,), 1e-6
            self.weight = torch.nn.Parameter(torch.rand(48) + 0.5)

    source = getattr(torch.nn, "RMSNorm", None)
    module = source(48, eps=1e-6) if source is not None else TorchRMSNorm()
    twin = RMSNorm.from_torch(module, client)
    assert twin.weight is module.weight
    x = torch.randn(5, 48)
    with torch.no_grad():
        y = twin(x)
        if source is not None:
            assert torch.allclose(y, module(x), rtol=1e-5, atol=1e-5)
    assert_close(y.double().numpy(), reference(x, module.weight.detach(), 1e-6)[0], "float32")


def test_inference_only(client):
    norm = RMSNorm(16, client=client)
    with pytest.raises(RuntimeError, match="inference only"):
        norm(torch.randn(2, 16))  # grad mode on, weight requires grad
    with pytest.raises(ValueError, match="last dimension"):
        RMSNorm((4, 16), client=client)
