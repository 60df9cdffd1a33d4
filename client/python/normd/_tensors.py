"""The caller's arrays and tensors as bytes for the wire, and the wire's bytes as the caller's kind.

Inputs are numpy arrays (float32, float16, and bfloat16 when the array's dtype comes from
ml_dtypes) or torch tensors (float32, float16, bfloat16; any device). A C-contiguous host tensor is
not copied here: it becomes a view of its own memory (a byte memoryview or flat uint8 array, or
for torch a ctypes array at its data pointer, which needs neither .numpy(), refused for bfloat16,
nor a dtype view), and the request's join copies it once. A CUDA tensor is copied to the host
first: the bytes transport has no other way to carry it.

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
_TORCH_CODES = {}  # torch dtype -> code, filled on first use


def torch_module():
    """torch, if the caller has imported it (then a tensor may be one of its tensors)."""
    return sys.modules.get("torch")


def is_torch_tensor(value) -> bool:
    torch = torch_module()
    return torch is not None and isinstance(value, torch.Tensor)


def _torch_codes():
    torch = torch_module()
    _TORCH_CODES.update({torch.float32: _wire.FLOAT32, torch.float16: _wire.FLOAT16,
                         torch.bfloat16: _wire.BFLOAT16})
    return _TORCH_CODES


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
# Outputs up to this size are copied into a bytearray; larger ones into numpy's own memory, which
# it backs with huge pages where it can (a large bytearray's first touch faults page by page).
_SMALL_OUTPUT = 1 << 20


class HostTensor(NamedTuple):
    """A tensor as the wire carries it: dtype code, shape, its little-endian bytes as a buffer
    (a flat uint8 array or byte memoryview, or a ctypes array over `owner`'s memory), and their
    size."""

    dtype: int
    shape: Tuple[int, ...]
    data: Any
    nbytes: int
    owner: Any = None  # a torch tensor's contiguous host copy or itself: keeps `data` alive
    device: Any = None  # a torch tensor's device when it is not the host
    numpy_dtype: Any = None  # a numpy array's dtype (little-endian)


def _unsupported(what: str, dtype) -> InvalidArgument:
    return InvalidArgument(f"{what}: dtype {dtype} is not supported; normd takes float32, float16 "
                           "or bfloat16 (numpy bfloat16 through ml_dtypes)")


def _from_numpy(array: np.ndarray, what: str) -> HostTensor:
    dtype = array.dtype
    code = _NUMPY_TYPES.get(dtype.type)
    if code is not None and dtype.byteorder != ">":
        # The common case in fewer steps than the general one below: a C-contiguous little-endian
        # float16/float32 array as its bytes (cast() refuses anything not C-contiguous or empty).
        try:
            data = memoryview(array).cast("B")
        except TypeError:
            pass
        else:
            return HostTensor(code, array.shape, data, data.nbytes, None, None, dtype)
    code = code or _NUMPY_NAMES.get(dtype.name)
    if code is None:
        raise _unsupported(what, dtype)
    if dtype.byteorder == ">":
        dtype = dtype.newbyteorder("<")
        array = array.astype(dtype)
    elif not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    return HostTensor(code, array.shape, array.reshape(-1).view(np.uint8), array.nbytes, None,
                      None, dtype)


def _from_torch(tensor, what: str) -> HostTensor:
    code = _TORCH_CODES.get(tensor.dtype) if _TORCH_CODES else _torch_codes().get(tensor.dtype)
    if code is None:
        raise _unsupported(what, tensor.dtype)
    device = None
    if not tensor.is_cpu:
        device = tensor.device
        tensor = tensor.detach().contiguous().cpu()  # contiguous() runs on the GPU
    elif not tensor.is_contiguous():
        tensor = tensor.contiguous()
    shape = tensor.shape  # a torch.Size: a tuple
    nbytes = math.prod(shape) * _wire.ITEMSIZE[code]
    # No .detach() needed: the address is read, not the autograd graph.
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


def make_output(buf: bytes, offset: int, host: HostTensor):
    """A new array or tensor like the input `host` came from (kind, dtype, shape, device), holding
    buf[offset : offset + host.nbytes]: the one copy of a result on its way back."""
    dtype = host.numpy_dtype
    if dtype is not None:
        if host.nbytes <= _SMALL_OUTPUT:
            # A bytearray copy is fewer steps than numpy's; the array adopts it (and is writable).
            copy = bytearray(memoryview(buf)[offset:offset + host.nbytes])
            return np.frombuffer(copy, dtype).reshape(host.shape)
        source = np.frombuffer(buf, dtype, host.nbytes // dtype.itemsize, offset)
        return source.reshape(host.shape).copy()
    torch = torch_module()
    if _BYTES_DATA is not None and type(buf) is bytes:
        out = torch.empty_like(host.owner)  # contiguous: the owner is
        ctypes.memmove(out.data_ptr(), id(buf) + _BYTES_DATA + offset, host.nbytes)
    else:
        # A shared-memory region: numpy's copy lands in memory numpy allocates with huge pages
        # where it can, which a fresh large torch tensor does not (its first touch then faults
        # page by page, several times the copy itself); the tensor adopts numpy's memory.
        flat = np.frombuffer(buf, np.uint8, host.nbytes, offset).copy()
        out = torch.from_numpy(flat).view(host.owner.dtype).reshape(host.owner.shape)
    return out if host.device is None else out.to(host.device)
