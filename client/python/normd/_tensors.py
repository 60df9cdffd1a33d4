"""The caller's arrays and tensors as bytes for the wire, and the wire's bytes as the caller's kind.

Inputs are numpy arrays (float32, float16, and bfloat16 when the array's dtype comes from
ml_dtypes) or torch tensors (float32, float16, bfloat16; any device). A C-contiguous host tensor is
not copied here: it becomes a view of its own memory (a flat uint8 array, or for torch a ctypes
array at its data pointer, which needs neither .numpy(), refused for bfloat16, nor a dtype view),
and the request's join copies it once. A CUDA tensor is copied to the host first: the bytes
transport has no other way to carry it.

Outputs are written once, from the received bytes into a new array or tensor of the input's kind,
dtype, shape and device: a writable result that does not keep grpcio's response buffer alive.
These paths run on every call, so they avoid what costs microseconds here (numpy's dtype.name,
torch.empty with a shape, torch's dtype views).

torch is imported only when the caller passes a torch tensor (it is in sys.modules by then).
"""

import ctypes
import math
import sys
from typing import Any, NamedTuple, Tuple

import numpy as np

from normd import _wire
from normd.errors import InvalidArgument

_NUMPY_TYPES = {np.float32: _wire.FLOAT32, np.float16: _wire.FLOAT16}
_NUMPY_NAMES = {"float32": _wire.FLOAT32, "float16": _wire.FLOAT16, "bfloat16": _wire.BFLOAT16}
_torch_types = None


def torch_module():
    """torch, if the caller has imported it (then a tensor may be one of its tensors)."""
    return sys.modules.get("torch")


def is_torch_tensor(value) -> bool:
    torch = torch_module()
    return torch is not None and isinstance(value, torch.Tensor)


def _torch_dtypes(torch):
    global _torch_types
    if _torch_types is None:
        _torch_types = {torch.float32: _wire.FLOAT32, torch.float16: _wire.FLOAT16,
                        torch.bfloat16: _wire.BFLOAT16}
    return _torch_types


def _bytes_data_offset():
    """Where a bytes object's data starts, relative to id(); None when that cannot be relied on
    (not CPython). Lets a response's tensor be copied with one memmove."""
    probe = b"normd-probe"
    offset = sys.getsizeof(b"") - 1
    try:
        if ctypes.string_at(id(probe) + offset, len(probe)) == probe:
            return offset
    except Exception:  # noqa: BLE001 - any doubt: use the portable path
        pass
    return None


_BYTES_DATA = _bytes_data_offset() if sys.implementation.name == "cpython" else None


class HostTensor(NamedTuple):
    """A tensor as the wire carries it: dtype code, shape, its little-endian bytes as a buffer
    (a flat uint8 array, or a ctypes array over `owner`'s memory), and their size."""

    dtype: int
    shape: Tuple[int, ...]
    data: Any
    nbytes: int
    owner: Any = None  # a torch tensor's contiguous host copy or itself: keeps `data` alive
    device: Any = None  # a torch tensor's device when it is not the host


def _unsupported(what: str, dtype) -> InvalidArgument:
    return InvalidArgument(f"{what}: dtype {dtype} is not supported; normd takes float32, float16 "
                           "or bfloat16 (numpy bfloat16 through ml_dtypes)")


def _from_numpy(array: np.ndarray, what: str) -> HostTensor:
    dtype = array.dtype
    code = _NUMPY_TYPES.get(dtype.type) or _NUMPY_NAMES.get(dtype.name)
    if code is None:
        raise _unsupported(what, dtype)
    if dtype.byteorder == ">":
        array = array.astype(dtype.newbyteorder("<"))
    elif not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    return HostTensor(code, array.shape, array.reshape(-1).view(np.uint8), array.nbytes)


def _from_torch(tensor, what: str) -> HostTensor:
    code = _torch_dtypes(torch_module()).get(tensor.dtype)
    if code is None:
        raise _unsupported(what, tensor.dtype)
    device = None
    if not tensor.is_contiguous():
        tensor = tensor.contiguous()  # on a GPU this runs there, before the copy to the host
    if not tensor.is_cpu:
        device = tensor.device
        tensor = tensor.detach().cpu()
    shape = tuple(tensor.shape)
    nbytes = math.prod(shape) * _wire.ITEMSIZE[code]
    # Requires no .detach(): the address is read, not the autograd graph.
    data = (ctypes.c_char * nbytes).from_address(tensor.data_ptr())
    return HostTensor(code, shape, data, nbytes, tensor, device)


def to_host(value, what: str) -> HostTensor:
    """The wire form of a numpy array or torch tensor; `what` names it in errors."""
    if isinstance(value, np.ndarray):
        return _from_numpy(value, what)
    if is_torch_tensor(value):
        return _from_torch(value, what)
    raise TypeError(f"{what}: expected a numpy array or a torch tensor, got {type(value).__name__}")


def weight_to_host(value, input_dtype: int) -> HostTensor:
    """A weight for a request of `input_dtype`: normd takes the input's dtype or float32, so a
    weight of a third dtype is widened to float32 (exact). Lists become float32 arrays."""
    if isinstance(value, (list, tuple)):
        value = np.asarray(value, dtype=np.float32)
    host = to_host(value, "weight")
    if host.dtype in (input_dtype, _wire.FLOAT32):
        return host
    wide = widen_to_float32(host)
    return HostTensor(_wire.FLOAT32, host.shape, wide.reshape(-1).view(np.uint8), wide.nbytes)


def widen_to_float32(host: HostTensor) -> np.ndarray:
    """The float32 values of a host tensor (exact for every dtype normd takes)."""
    if host.dtype == _wire.FLOAT32:
        return np.frombuffer(host.data, np.float32).reshape(host.shape)
    if host.dtype == _wire.FLOAT16:
        return np.frombuffer(host.data, np.float16).astype(np.float32).reshape(host.shape)
    # bfloat16 is the top half of a float32.
    bits = np.frombuffer(host.data, np.uint16).astype(np.uint32) << 16
    return bits.view(np.float32).reshape(host.shape)


class OutputKind:
    """Makes results of the kind, dtype, shape and device of a call's input from the response."""

    __slots__ = ("_numpy_dtype", "_like", "_device")

    def __init__(self, value, host: HostTensor):
        if host.owner is None:  # numpy
            dtype = value.dtype
            self._numpy_dtype = dtype.newbyteorder("<") if dtype.byteorder == ">" else dtype
        else:
            self._numpy_dtype = None
            self._like = host.owner  # contiguous, on the host, the input's dtype and shape
            self._device = host.device

    def make(self, buf: bytes, offset: int, host: HostTensor):
        """The tensor whose bytes are buf[offset : offset + host.nbytes]."""
        if self._numpy_dtype is not None:
            source = np.frombuffer(buf, self._numpy_dtype, host.nbytes // self._numpy_dtype.itemsize,
                                   offset)
            return source.reshape(host.shape).copy()
        out = torch_module().empty_like(self._like, requires_grad=False)
        if _BYTES_DATA is not None and type(buf) is bytes:
            ctypes.memmove(out.data_ptr(), id(buf) + _BYTES_DATA + offset, host.nbytes)
        else:
            target = (ctypes.c_char * host.nbytes).from_address(out.data_ptr())
            np.frombuffer(target, np.uint8)[:] = np.frombuffer(buf, np.uint8, host.nbytes, offset)
        return out if self._device is None else out.to(self._device)
