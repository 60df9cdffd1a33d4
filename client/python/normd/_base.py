"""What normd.Client and normd.aio.Client share: options, transport choice, the weight cache,
marshalling, and the server's request limit. The two differ only in how they wait for RPCs."""

import time
from typing import Optional

import numpy as np

from normd import _call, _channel, _wire
from normd._tensors import to_host
from normd._transport import TransportChooser
from normd._weights import Weight, WeightCache, tensor_message
from normd.errors import NormdError
from normd.info import ServerInfo

# How long the first call may spend asking the server for its limits.
_INFO_TIMEOUT = 5.0


class ClientBase:
    def __init__(self, target: str, options: dict):
        self._options = _channel.Options(target=target, **options)
        self._options.validate()
        self._transport = TransportChooser(self._options.transport)
        self._cache = WeightCache() if self._options.cache_weights else None
        # The server's --max-request-bytes: given, or asked for on first use.
        self._max_request_bytes: Optional[int] = self._options.max_request_bytes or None

    @property
    def options(self) -> _channel.Options:
        return self._options

    @property
    def target(self) -> str:
        return self._options.target

    @property
    def max_request_bytes(self) -> Optional[int]:
        """The request limit in force: given, or learned from the server (None: not asked yet)."""
        return self._max_request_bytes

    def transport_for(self, x) -> Optional[str]:
        """The transport a call with input `x` uses ("bytes" today)."""
        return self._transport.picked_for(x)

    def _deadline(self, timeout: Optional[float]) -> float:
        return time.monotonic() + (self._options.timeout if timeout is None else timeout)

    @staticmethod
    def _remaining(deadline: float) -> float:
        return max(deadline - time.monotonic(), 0.0)

    def _prepare(self, x, weight, eps, residual, weight_offset, request_id) -> _call.PreparedCall:
        return _call.prepare(self._transport.attach, self._cache, x, weight, eps, residual,
                             weight_offset, request_id)

    def _plan(self, call: _call.PreparedCall):
        limit = self._max_request_bytes or _channel.DEFAULT_MAX_REQUEST_BYTES
        return _call.plan(call, self._cache, limit)

    def _checked(self, request: bytes) -> bytes:
        """`request`, if it is within the server's limit (else ResourceExhausted)."""
        return _call.check_size(request,
                                self._max_request_bytes or _channel.DEFAULT_MAX_REQUEST_BYTES)

    def _info_timeout(self, deadline: float) -> float:
        return min(self._remaining(deadline), _INFO_TIMEOUT)

    def _learned_info(self, response: bytes) -> ServerInfo:
        info = ServerInfo.from_fields(_wire.read_server_info(response))
        if not self._options.max_request_bytes and info.max_request_bytes > 0:
            self._max_request_bytes = info.max_request_bytes
        return info

    @staticmethod
    def _weight_to_register(weight):
        """(host form, Tensor message) of a weight for register_weight, as the caller gave it."""
        if isinstance(weight, (list, tuple)):
            weight = np.asarray(weight, dtype=np.float32)
        host = to_host(weight, "weight")
        return weight, host, tensor_message(host)

    def _registered(self, value, host, message: bytes, response: bytes) -> Weight:
        weight = Weight(_wire.read_register_weight_response(response), host.dtype,
                        host.shape[-1] if host.shape else 0, message)
        if self._cache is not None:
            self._cache.remember(value, weight)
        return weight


def drive_sync(steps, rpc):
    """Runs a plan (normd._call) with `rpc(method, request) -> response bytes`, which raises
    NormdError; returns the plan's result."""
    response, error = None, None
    while True:
        try:
            method, request = steps.send(response) if error is None else steps.throw(error)
        except StopIteration as done:
            return done.value
        try:
            response, error = rpc(method, request), None
        except NormdError as e:
            response, error = None, e
