"""Test inputs of each kind (numpy, torch) and dtype, and their exact values in fp64."""

import numpy as np
import pytest

KINDS = ["numpy", "torch"]
DTYPES = ["float32", "float16", "bfloat16"]


def torch_or_skip():
    return pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")


def make(kind, dtype, values, device="cpu"):
    """`values` (float32 numpy) as a `kind` tensor of `dtype` (rounded to it)."""
    if kind == "numpy":
        if dtype == "bfloat16":
            ml_dtypes = pytest.importorskip(
                "ml_dtypes", reason="numpy has no bfloat16 without ml_dtypes (not in Debian 12); "
                "tests/run_gpu.sh runs this where it is installed")
            return values.astype(ml_dtypes.bfloat16)
        return values.astype(dtype)
    torch = torch_or_skip()
    return torch.from_numpy(np.ascontiguousarray(values)).to(getattr(torch, dtype)).to(device)


def to64(value):
    if isinstance(value, np.ndarray):
        return value.astype(np.float64)
    return value.detach().cpu().to(dtype=__import__("torch").float64).numpy()


def dtype_name(value):
    if isinstance(value, np.ndarray):
        return value.dtype.name
    return str(value.dtype).replace("torch.", "")


def random_values(rng, shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def random_weight(rng, hidden):
    return rng.uniform(0.5, 1.5, hidden).astype(np.float32)
