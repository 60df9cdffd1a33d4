"""The fp64 reference of normd's math, and the tolerances a result must meet.

For each row x (length H) with residual r: h = x + r; y = h / sqrt(mean(h^2) + eps) * (offset + w).
Inputs are taken at the values their dtype holds, so the reference differs from normd only by
normd's fp32 arithmetic and its one rounding to the output dtype.
"""

import numpy as np

# Half an ulp of the output dtype at 1.0, plus fp32 arithmetic's error, relative to the row's scale.
TOLERANCE = {"float32": 2e-6, "float16": 1.5e-3, "bfloat16": 8e-3}


def rms_norm_reference(x64, w64, eps, residual64=None, weight_offset=0.0):
    h = x64 if residual64 is None else x64 + residual64
    inv_rms = 1.0 / np.sqrt(np.mean(h * h, axis=-1, keepdims=True) + eps)
    return h * inv_rms * (weight_offset + w64), h


def assert_close(actual64, expected64, dtype_name, what="y"):
    scale = np.maximum(np.abs(expected64), 1.0)
    error = np.abs(actual64 - expected64) / scale
    worst = float(error.max()) if error.size else 0.0
    assert worst <= TOLERANCE[dtype_name], (
        f"{what}: worst relative error {worst:.3g} > {TOLERANCE[dtype_name]} ({dtype_name})")
