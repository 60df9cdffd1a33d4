"""Registered weights: the Weight handle, and the cache that sends a weight by id after first use.

normd's weight ids are digests of the dtype, hidden size and bytes: the same weight gets the same id
from any normd, across restarts. So a client may register a weight once and name it by its id from
then on; when a server answers NOT_FOUND (it restarted, or evicted the weight) the client registers
the same bytes again, gets the same id back, and retries.

The cache maps the caller's weight object to its registration. A hit must be cheap (it happens on
every call) and must not be fooled by a weight changed in place: numpy arrays and host torch
tensors are compared with the bytes they had when registered (a copy and a memcmp, about a
microsecond for 4096 floats); CUDA tensors, whose bytes would have to come to the host, by torch's
version counter, which every in-place torch operation bumps. An object seen for the first time is
looked up by content, so a fresh array with the same values (`np.ones(4096)` on each call) reuses
the registration instead of registering again. Both maps are bounded.
"""

import collections
import ctypes
import threading
import weakref
from typing import Optional

import numpy as np

from normd import _wire
from normd._tensors import HostTensor, torch_module


class Weight:
    """A weight registered with normd (Client.register_weight). Pass it as the weight of a call;
    it keeps the bytes it was registered with, to register them again after a NOT_FOUND."""

    __slots__ = ("id", "dtype", "hidden", "tensor_message", "id_field", "inline")

    def __init__(self, weight_id: str, dtype: int, hidden: int, tensor_message: bytes):
        self.id = weight_id
        self.dtype = dtype
        self.hidden = hidden
        self.tensor_message = tensor_message  # the Tensor message RegisterWeight sends
        self.id_field = _wire.string_field(_wire.WEIGHT_ID, weight_id)  # as a request names it
        # Set when registering again did not help (replicas behind a load balancer, each
        # answering NOT_FOUND in turn): calls then send the weight inline.
        self.inline = False

    @property
    def dtype_name(self) -> str:
        return _wire.DTYPE_NAMES.get(self.dtype, str(self.dtype))

    def __repr__(self) -> str:
        return f"normd.Weight(id={self.id!r}, dtype={self.dtype_name}, hidden={self.hidden})"


def tensor_message(host: HostTensor) -> bytes:
    return _wire.tensor_header(host.dtype, host.shape, host.nbytes) + bytes(host.data)


def _host_bytes(value) -> Optional[bytes]:
    """The bytes of a numpy array or host torch tensor as it is now (C order); None for a tensor
    on a device."""
    if isinstance(value, np.ndarray):
        return value.tobytes()
    if not value.is_cpu:
        return None
    if not value.is_contiguous():
        value = value.contiguous()
    return ctypes.string_at(value.data_ptr(), value.numel() * value.element_size())


def _device_version(value):
    """The version counter of a torch tensor on a device; None for host data, or for a tensor made
    under torch.inference_mode() (it has none)."""
    torch = torch_module()
    if torch is None or not isinstance(value, torch.Tensor) or value.is_cpu:
        return None
    try:
        return value._version
    except RuntimeError:
        return None


class _Entry:
    __slots__ = ("ref", "weight", "version", "data")

    def __init__(self, ref, weight: Weight, version, data: Optional[bytes]):
        self.ref = ref
        self.weight = weight
        self.version = version  # for a device tensor
        self.data = data  # for host data: its bytes when registered


class WeightCache:
    """Thread-safe. Holds at most `max_weights` registrations."""

    def __init__(self, max_weights: int = 1024):
        self._max = max_weights
        self._lock = threading.RLock()  # re-entrant: a weakref callback may run under it
        self._by_object = {}  # id(obj) -> _Entry
        self._by_content = collections.OrderedDict()  # tensor_message -> Weight, LRU order

    def find(self, value, input_dtype: int) -> Optional[Weight]:
        """The registration of `value` usable with an input of `input_dtype`, if `value` is
        unchanged since it was registered."""
        entry = self._by_object.get(id(value))
        if entry is None or entry.ref() is not value:
            return None
        weight = entry.weight
        if weight.dtype != input_dtype and weight.dtype != _wire.FLOAT32:
            return None
        if entry.data is not None:
            return weight if _host_bytes(value) == entry.data else None
        version = _device_version(value)
        return weight if version is not None and version == entry.version else None

    def find_content(self, message: bytes) -> Optional[Weight]:
        with self._lock:
            weight = self._by_content.get(message)
            if weight is not None:
                self._by_content.move_to_end(message)
            return weight

    def remember(self, value, weight: Weight) -> None:
        key = id(value)

        def forget(ref, key=key):
            with self._lock:
                entry = self._by_object.get(key)
                if entry is not None and entry.ref is ref:
                    del self._by_object[key]

        try:
            ref = weakref.ref(value, forget)
        except TypeError:  # a type without weak references (a list): cached by content only
            ref = None
        entry = None
        if ref is not None:
            data = _host_bytes(value)
            version = _device_version(value) if data is None else None
            if data is not None or version is not None:
                entry = _Entry(ref, weight, version, data)
        with self._lock:
            self._by_content[weight.tensor_message] = weight
            self._by_content.move_to_end(weight.tensor_message)
            while len(self._by_content) > self._max:
                self._by_content.popitem(last=False)
            if entry is not None:
                if len(self._by_object) >= self._max and key not in self._by_object:
                    self._by_object.pop(next(iter(self._by_object)))
                self._by_object[key] = entry
