"""normd.Client: RMSNorm on a normd server, numpy arrays and torch tensors in, the same out.

    client = normd.Client("127.0.0.1:50051")
    y = client.rms_norm(x, weight, eps=1e-6)                  # x: [..., hidden]; weight: [hidden]
    y, h = client.rms_norm(x, weight, residual=r)             # h = x + r, rounded to x's dtype

The result has x's kind (numpy array or torch tensor), dtype, shape and device. A weight given as an
array or tensor is registered on first use and sent by its id afterwards (see normd._weights).

Threads: a Client is thread-safe; many threads may call it at once (they share one connection).
For many requests in flight from one thread, use stream() (answers in order) or normd.aio.Client.
"""

import time
from typing import Optional

import grpc

from normd import _base, _call, _channel, _wire
from normd.errors import NormdError, NotFound, from_rpc_error
from normd.info import ServerInfo


class Client(_base.ClientBase):
    """A connection to normd. Keyword options (normd._channel.Options): timeout (seconds, each
    call's default deadline), max_request_bytes (0: ask the server), max_attempts, initial_backoff,
    max_backoff, keepalive_time, keepalive_timeout, max_reconnect_backoff, connect_timeout,
    wait_for_ready, own_connection, tls (normd.TLS), transport ("auto", "bytes", "shm" or
    "cuda-ipc"; see normd._transport), cache_weights.

    Creating a Client does not connect: the first call does, and asks the server for its limits.
    """

    def __init__(self, target: str = "127.0.0.1:50051", **options):
        super().__init__(target, options)
        self._channel = _channel.make_channel(self._options)
        self._methods = {
            name: self._channel.unary_unary(name)
            for name in (_channel.NORMALIZE, _channel.REGISTER_WEIGHT, _channel.GET_SERVER_INFO,
                         _channel.HEALTH_CHECK)
        }
        self._normalize = self._methods[_channel.NORMALIZE]
        self._wait_for_ready = self._options.wait_for_ready or None  # None: grpcio's default
        self._normalize_stream = self._channel.stream_stream(_channel.NORMALIZE_STREAM)
        self._transport.bind(self._channel, target)

    def rms_norm(self, x, weight, eps: float = 1e-6, residual=None, weight_offset: float = 0.0, *,
                 timeout: Optional[float] = None, request_id: str = ""):
        """RMSNorm of `x` ([..., hidden]) with `weight` ([hidden]: an array or tensor of x's dtype or
        float32, a Weight from register_weight, or a weight id). With `residual` (x's shape and
        dtype) it returns (y, x + residual). `weight_offset` 1 is Gemma's (1 + w). `timeout` in
        seconds (default: the client's). Raises a normd.NormdError subclass on failure."""
        timeout = self._options.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        if self._max_request_bytes is None:
            self._ask_limits(deadline)
        call = self._prepare(x, weight, eps, residual, weight_offset, request_id)
        try:
            if call.pending is not None:  # a weight's first use: register, then send
                response = _base.drive_sync(self._plan(call), self._rpc_until(deadline))
                return call.attached.outputs(response)
            request = self._checked(call.request())
            try:
                response = self._normalize(request, timeout=timeout,
                                           wait_for_ready=self._wait_for_ready)
            except grpc.RpcError as e:
                error = from_rpc_error(e)
                if not isinstance(error, NotFound) or call.weight is None:
                    raise error from None
                response = _base.drive_sync(_call.recover(call, request),
                                            self._rpc_until(deadline))
            return call.attached.outputs(response)
        finally:
            call.attached.release()

    def register_weight(self, weight, *, timeout: Optional[float] = None):
        """Registers `weight` ([hidden], any of normd's dtypes) and returns its normd.Weight."""
        value, host, message = self._weight_to_register(weight)
        response = self._rpc_until(self._deadline(timeout))(
            _channel.REGISTER_WEIGHT, _wire.register_weight_request(message))
        return self._registered(value, host, message, response)

    def server_info(self, *, timeout: Optional[float] = None) -> ServerInfo:
        response = self._rpc_until(self._deadline(timeout))(_channel.GET_SERVER_INFO, b"")
        return self._learned_info(response)

    def health(self, *, timeout: Optional[float] = None) -> bool:
        """grpc.health.v1 Check(""): True when normd is SERVING; False while it starts or drains."""
        response = self._rpc_until(self._deadline(timeout))(_channel.HEALTH_CHECK, b"")
        return _wire.read_health_status(response) == _wire.HEALTH_SERVING

    def stream(self, max_in_flight: int = 128):
        """A normd.Stream: many requests in flight on one NormalizeStream."""
        from normd.stream import Stream

        return Stream(self, max_in_flight)

    def close(self) -> None:
        """Unregisters this client's shared-memory regions, ends its session, closes the channel."""
        self._transport.close()
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _ask_limits(self, deadline: float) -> None:
        try:
            response = self._methods[_channel.GET_SERVER_INFO](
                b"", timeout=self._info_timeout(deadline),
                wait_for_ready=self._options.wait_for_ready)
        except grpc.RpcError:
            return  # the call itself will say what is wrong; the default limit holds meanwhile
        self._learned_info(response)

    def _rpc_until(self, deadline: float):
        methods, wait_for_ready = self._methods, self._options.wait_for_ready

        def rpc(method: str, request: bytes) -> bytes:
            try:
                return methods[method](request, timeout=self._remaining(deadline),
                                       wait_for_ready=wait_for_ready)
            except grpc.RpcError as e:
                raise from_rpc_error(e) from None

        return rpc

    def _finish_unary(self, call) -> object:
        """Sends an already prepared call as a unary RPC (a stream's unanswered request)."""
        deadline = self._deadline(None)
        response = _base.drive_sync(self._plan(call), self._rpc_until(deadline))
        return call.attached.outputs(response)


__all__ = ["Client", "NormdError"]
