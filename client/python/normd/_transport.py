"""Transports: how a call's input and residual reach normd, and how its outputs come back.

Only "bytes" exists today: the tensors travel inside the gRPC messages, which works across hosts.
normd is gaining same-host data planes (see DESIGN.md, "Two data planes"): system shared memory for
host tensors and CUDA IPC for GPU tensors, where a request carries references (region, offset,
length) instead of bytes. Each will be a Transport here:

- `supports(x)` says whether it can carry this input (its device, and for same-host transports
  whether the server is on this host, decided once per client);
- `attach(x, residual)` places the tensors and returns the request's input and residual fields as
  chunks (bytes, or reference messages), together with how to read the response's outputs back
  into the caller's kind (and what to release afterwards).

The weight, eps, offset and request id are the client's, the same for every transport. "auto" picks
the first transport in `_AUTO_ORDER` that supports the input; today that is always "bytes".
"""

import abc
import threading
from typing import Dict, List, Optional, Type

import numpy as np

from normd import _cuda_ipc, _shm, _wire
from normd._tensors import HostTensor, is_torch_tensor, make_output, to_host, torch_module
from normd.errors import FailedPrecondition, Internal, NormdError


class Attached(abc.ABC):
    """One call's tensors, placed by a transport."""

    input: HostTensor  # dtype and shape (and, for bytes, the data)
    input_field: List  # chunks of NormalizeRequest.input
    residual_field: List  # chunks of NormalizeRequest.residual ([] without a residual)
    output_field = b""  # output_region and residual_out_region (same-host transports)

    @abc.abstractmethod
    def outputs(self, response: bytes):
        """The caller's result from the response's bytes: y, or (y, residual_out)."""

    def release(self) -> None:
        """Frees what the transport holds for this call (shared regions); bytes holds nothing."""


class Transport(abc.ABC):
    name = ""

    @abc.abstractmethod
    def supports(self, x) -> bool:
        """Whether this transport can carry input `x`."""

    @abc.abstractmethod
    def attach(self, x, residual) -> Attached:
        """Places `x` (and `residual`, or None) for one call."""


class _BytesAttached(Attached):
    __slots__ = ("input", "input_field", "residual_field", "_residual", "_residual_host")

    def __init__(self, x, residual):
        self.input = host = to_host(x, "input")
        self.input_field = _wire.tensor_field(_wire.INPUT, *host[:4])
        self._residual = residual is not None
        # The fields point into the host tensors' memory, not at copies: each HostTensor is kept
        # for as long as the call, since for a CUDA or non-contiguous torch tensor it owns the
        # only host copy of the bytes the request is built from.
        self._residual_host = None
        if self._residual:
            self._residual_host = r = to_host(residual, "residual")
            self.residual_field = _wire.tensor_field(_wire.RESIDUAL, *r[:4])
        else:
            self.residual_field = []

    def outputs(self, response: bytes):
        host = self.input
        # normd writes output (field 1) first, as the input's dtype and shape: the response then
        # starts with the request's own input prefix. Anything else takes the general parser.
        prefix = self.input_field[0]
        if response.startswith(prefix):
            y = make_output(response, len(prefix), host)
            if not self._residual:
                return y
            at = len(prefix) + host.nbytes
            prefix = _wire.tensor_prefix(_wire.RESIDUAL_OUT, host.dtype, host.shape, host.nbytes)
            if response.startswith(prefix, at):
                return y, make_output(response, at + len(prefix), host)
        decoded = _wire.read_normalize_response(response)
        y = make_output(response, self._offset_of(decoded.output), host)
        if not self._residual:
            return y
        return y, make_output(response, self._offset_of(decoded.residual_out), host)

    def _offset_of(self, span) -> int:
        host = self.input
        if span is None:
            raise Internal("response: a tensor is missing")
        if (span.dtype, span.shape, span.length) != (host.dtype, host.shape, host.nbytes):
            raise Internal(f"response: a tensor of dtype {span.dtype}, shape {list(span.shape)} "
                           f"and {span.length} bytes; the input's are {host.dtype}, "
                           f"{list(host.shape)} and {host.nbytes}")
        return span.offset


class BytesTransport(Transport):
    """Tensors inside the messages: one copy into the request, one out of the response."""

    name = "bytes"

    def supports(self, x) -> bool:
        return True

    def attach(self, x, residual) -> Attached:
        return _BytesAttached(x, residual)


class TransportUnavailable(FailedPrecondition):
    """An explicitly chosen transport cannot be used with this server (the cause is chained)."""


class _SameHostTransport(Transport):
    """A transport through regions of the connection's session (normd._shm.RegionSession).
    Usable when the target is on this host and normd registers the region kind; decided once, on
    the first call that could use it. With "auto" an unusable one is skipped for the client's
    life; chosen explicitly, it raises TransportUnavailable."""

    flag = ""  # what normd needs for it

    def __init__(self, explicit: bool = False):
        self._explicit = explicit
        self._session = None
        self._target = ""
        self._usable: Optional[bool] = None
        self._lock = threading.Lock()

    def bind(self, session, target: str) -> None:
        self._session, self._target = session, target

    def _probe(self) -> None:
        """Registers what the transport needs first; raises NormdError when normd refuses."""

    def _why_unusable(self) -> Optional[Exception]:
        if self._session is None:
            return ValueError("this client kind has no shared-memory support (use normd.Client)")
        if not _shm.is_local_target(self._target):
            return ValueError(f"target {self._target} is not on this host (unix: or loopback)")
        try:
            self._probe()
        except NormdError as e:
            return e
        return None

    def usable(self) -> bool:
        if self._usable is None:
            with self._lock:
                if self._usable is None:
                    cause = self._why_unusable()
                    if cause is not None and self._explicit:
                        raise TransportUnavailable(
                            f"transport '{self.name}' is not available with {self._target}: "
                            f"{cause} (normd needs {self.flag} and a client on its host)") \
                            from cause
                    self._usable = cause is None
        return self._usable

    def close(self) -> None:
        """Releases what the transport holds (the session itself is the chooser's)."""


class ShmTransport(_SameHostTransport):
    """Host tensors (numpy, torch CPU) through system shared-memory regions (normd._shm)."""

    name = "shm"
    flag = "--shared-memory=system"

    def __init__(self, explicit: bool = False):
        super().__init__(explicit)
        self._pool = None

    def _probe(self) -> None:
        pool = _shm.RegionPool(self._session)
        pool.release(pool.acquire(0))  # registration works: keep that region for the calls
        self._pool = pool

    def supports(self, x) -> bool:
        if is_torch_tensor(x):
            if not x.is_cpu:
                return False
        elif not isinstance(x, np.ndarray):
            return False
        return self.usable()

    def attach(self, x, residual) -> Attached:
        attached = _shm.attach(self._pool, x, residual)
        return attached if attached is not None else _BytesAttached(x, residual)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()


class CudaIpcTransport(_SameHostTransport):
    """torch CUDA tensors as CUDA regions: they never leave the GPU (normd._cuda_ipc)."""

    name = "cuda-ipc"
    flag = "--shared-memory=cuda (on the CUDA backend)"

    def _probe(self) -> None:
        torch = torch_module()
        if torch is None or not torch.cuda.is_available():
            raise FailedPrecondition("torch with CUDA is not available in this process")
        probe = torch.empty(256, dtype=torch.uint8, device="cuda")
        _cuda_ipc.CudaAttached(self._session, probe.view(torch.float16)[None, :], None).release()

    def supports(self, x) -> bool:
        return _cuda_ipc.is_cuda_tensor(x) and self.usable()

    def attach(self, x, residual) -> Attached:
        if residual is not None and not _cuda_ipc.is_cuda_tensor(residual):
            return _BytesAttached(x, residual)  # normd names the mismatch
        return _cuda_ipc.CudaAttached(self._session, x, residual)


_TRANSPORTS: Dict[str, Type[Transport]] = {"bytes": BytesTransport, "shm": ShmTransport,
                                            "cuda-ipc": CudaIpcTransport}
_AUTO_ORDER = ("cuda-ipc", "shm", "bytes")


def available() -> List[str]:
    return ["auto", *_TRANSPORTS]


class TransportChooser:
    """Picks the transport of each call for a client's `transport=` option."""

    def __init__(self, name: str):
        if name != "auto" and name not in _TRANSPORTS:
            raise ValueError(f"transport: '{name}' is not available; expected one of "
                             f"{', '.join(available())}")
        self.name = name
        names = _AUTO_ORDER if name == "auto" else (name,)
        self._candidates = [
            _TRANSPORTS[n](explicit=name == n) if issubclass(_TRANSPORTS[n], _SameHostTransport)
            else _TRANSPORTS[n]() for n in names]
        self._session = None
        if len(self._candidates) == 1 and isinstance(self._candidates[0], BytesTransport):
            self.attach = self._candidates[0].attach  # carries anything: no choice to make

    def bind(self, channel, target: str) -> None:
        """Gives same-host transports the connection's one region session (opened on first use)."""
        same_host = [t for t in self._candidates if isinstance(t, _SameHostTransport)]
        if same_host:
            self._session = _shm.RegionSession(channel)
            for transport in same_host:
                transport.bind(self._session, target)

    def close(self) -> None:
        for transport in self._candidates:
            if isinstance(transport, _SameHostTransport):
                transport.close()
        if self._session is not None:
            self._session.close()

    def attach(self, x, residual) -> Attached:
        for transport in self._candidates:
            if transport.supports(x):
                return transport.attach(x, residual)
        raise ValueError(f"transport '{self.name}' cannot carry this input")

    def picked_for(self, x) -> Optional[str]:
        """The name of the transport a call with input `x` would use."""
        for transport in self._candidates:
            if transport.supports(x):
                return transport.name
        return None
