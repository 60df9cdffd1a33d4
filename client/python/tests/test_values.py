"""Values against the fp64 reference: every dtype, numpy and torch, with and without a residual,
weight_offset 0 and 1, weights inline, registered, cached and widened."""

import numpy as np
import pytest

import normd
from reference import assert_close, rms_norm_reference
from tensors import DTYPES, KINDS, dtype_name, make, random_values, random_weight, to64

SHAPES = [(1, 4096), (19, 111), (2, 3, 500), (5, 1)]


def check(client, kind, dtype, shape, residual, offset, weight_dtype, seed, **call):
    rng = np.random.default_rng(seed)
    x = make(kind, dtype, random_values(rng, shape, scale=3.0))
    w = make(kind, weight_dtype, random_weight(rng, shape[-1]))
    r = make(kind, dtype, random_values(rng, shape)) if residual else None
    result = client.rms_norm(x, w, eps=1e-5, residual=r, weight_offset=offset, **call)
    y, h = result if residual else (result, None)
    assert type(y) is type(x) and dtype_name(y) == dtype and tuple(y.shape) == shape
    expected_y, expected_h = rms_norm_reference(
        to64(x), to64(w), 1e-5, to64(r) if residual else None, offset)
    assert_close(to64(y), expected_y, dtype)
    if residual:
        assert type(h) is type(x) and dtype_name(h) == dtype and tuple(h.shape) == shape
        assert_close(to64(h), expected_h, dtype, "residual_out")
    return y


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("residual", [False, True], ids=["plain", "residual"])
@pytest.mark.parametrize("offset", [0.0, 1.0], ids=["offset0", "offset1"])
def test_matches_reference(client, kind, dtype, residual, offset):
    for i, shape in enumerate(SHAPES):
        check(client, kind, dtype, shape, residual, offset, dtype, seed=i)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_float32_weight_with_half_input(client, kind, dtype):
    check(client, kind, dtype, (7, 256), True, 0.0, "float32", seed=11)


@pytest.mark.parametrize("kind", KINDS)
def test_weight_of_a_third_dtype_is_widened(client, kind):
    # normd takes the input's dtype or float32: a float16 weight for bfloat16 input travels as
    # float32 (exact), and the result is the same as with the float32 weight.
    rng = np.random.default_rng(3)
    x = make(kind, "bfloat16", random_values(rng, (4, 64)))
    w16 = make(kind, "float16", random_weight(rng, 64))
    w32 = make(kind, "float32", to64(w16).astype(np.float32))
    assert np.array_equal(to64(client.rms_norm(x, w16)), to64(client.rms_norm(x, w32)))


@pytest.mark.parametrize("kind", KINDS)
def test_registered_inline_and_cached_weights_agree(server, client, kind):
    rng = np.random.default_rng(5)
    x = make(kind, "float16", random_values(rng, (9, 320)))
    w = make(kind, "float16", random_weight(rng, 320))
    with normd.Client(server.address, cache_weights=False) as inline_client:
        inline = to64(inline_client.rms_norm(x, w, weight_offset=1.0))
    handle = client.register_weight(w)
    assert isinstance(handle, normd.Weight) and handle.hidden == 320
    assert handle.dtype_name == "float16" and len(handle.id) > 0
    assert np.array_equal(to64(client.rms_norm(x, handle, weight_offset=1.0)), inline)
    assert np.array_equal(to64(client.rms_norm(x, handle.id, weight_offset=1.0)), inline)
    assert np.array_equal(to64(client.rms_norm(x, w, weight_offset=1.0)), inline)


def test_numpy_and_torch_give_the_same_bits(client):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    rng = np.random.default_rng(8)
    x = random_values(rng, (6, 1000)).astype(np.float16)
    w = random_weight(rng, 1000)
    y_numpy = client.rms_norm(x, w)
    y_torch = client.rms_norm(torch.from_numpy(x), torch.from_numpy(w))
    assert np.array_equal(y_numpy.view(np.uint16), y_torch.view(torch.int16).numpy().view(np.uint16))


def test_non_contiguous_and_big_endian_inputs(client):
    rng = np.random.default_rng(9)
    base = random_values(rng, (64, 32))
    w = random_weight(rng, 64)
    transposed = base.T  # [32, 64], not C-contiguous
    big_endian = np.ascontiguousarray(transposed).astype(">f4")
    expected, _ = rms_norm_reference(transposed.astype(np.float64), w.astype(np.float64), 1e-6)
    for x in (transposed, big_endian):
        y = client.rms_norm(x, w)
        assert y.shape == (32, 64) and y.flags.c_contiguous and y.flags.writeable
        assert_close(y.astype(np.float64), expected, "float32")


def test_non_contiguous_torch_residual(client):
    # A non-contiguous torch tensor is sent from a contiguous host copy that the call must keep
    # alive until the request is sent (as for a CUDA tensor's copy). 8 MiB: freed early, the copy
    # would go back to the system and its bytes would be garbage or unmapped.
    torch = pytest.importorskip("torch", reason="the test needs torch")
    generator = torch.Generator().manual_seed(11)
    x = torch.randn(512, 4096, generator=generator)
    r = torch.randn(4096, 512, generator=generator).t()  # [512, 4096], not contiguous
    w = torch.rand(4096, generator=generator) + 0.5
    assert not r.is_contiguous()
    expected_y, expected_h = rms_norm_reference(
        x.double().numpy(), w.double().numpy(), 1e-6, r.double().numpy())
    for _ in range(3):
        y, h = client.rms_norm(x, w, eps=1e-6, residual=r)
        assert_close(y.double().numpy(), expected_y, "float32")
        assert_close(h.double().numpy(), expected_h, "float32", "residual_out")


def test_an_all_zero_row_gives_zeros(client):
    x = np.zeros((2, 128), np.float32)
    x[1] = 1.0
    y = client.rms_norm(x, np.ones(128, np.float32), eps=1e-6)
    assert np.all(y[0] == 0.0) and np.allclose(y[1], 1.0 / np.sqrt(1.0 + 1e-6))
