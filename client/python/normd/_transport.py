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
from typing import Dict, List, Optional, Type

from normd import _wire
from normd._tensors import HostTensor, make_output, to_host
from normd.errors import Internal


class Attached(abc.ABC):
    """One call's tensors, placed by a transport."""

    input: HostTensor  # dtype and shape (and, for bytes, the data)
    input_field: List  # chunks of NormalizeRequest.input
    residual_field: List  # chunks of NormalizeRequest.residual ([] without a residual)

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
    __slots__ = ("input", "input_field", "residual_field", "_residual")

    def __init__(self, x, residual):
        self.input = host = to_host(x, "input")
        self.input_field = _wire.tensor_field(_wire.INPUT, *host[:4])
        self._residual = residual is not None
        if self._residual:
            r = to_host(residual, "residual")
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


_TRANSPORTS: Dict[str, Type[Transport]] = {"bytes": BytesTransport}
_AUTO_ORDER = ("bytes",)


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
        self._candidates = [_TRANSPORTS[n]() for n in names]
        if len(self._candidates) == 1 and isinstance(self._candidates[0], BytesTransport):
            self.attach = self._candidates[0].attach  # carries anything: no choice to make

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
