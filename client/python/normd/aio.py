"""normd.aio.Client: the asyncio twin of normd.Client, on grpc.aio.

    async with normd.aio.Client("127.0.0.1:50051") as client:
        y = await client.rms_norm(x, weight)
        ys = await asyncio.gather(*(client.rms_norm(b, weight) for b in batches))
        async with client.stream() as stream:
            futures = [await stream.submit(b, weight) for b in batches]   # answers in order
            ys = [await f for f in futures]

Same arguments, results, weight handling and exceptions as normd.Client. Use a Client from the
event loop it was first used on (grpc.aio's rule).
"""

import asyncio
import collections
from typing import Optional

import grpc

from normd import _base, _channel, _wire
from normd.errors import Internal, NormdError, NotFound, Unavailable, from_rpc_error
from normd.info import ServerInfo
from normd.stream import _registration_then_request


async def _drive(steps, rpc):
    """drive_sync's loop (normd._base) with awaited RPCs."""
    response, error = None, None
    while True:
        try:
            method, request = steps.send(response) if error is None else steps.throw(error)
        except StopIteration as done:
            return done.value
        try:
            response, error = await rpc(method, request), None
        except NormdError as e:
            response, error = None, e


class Client(_base.ClientBase):
    """See normd.Client for the options."""

    def __init__(self, target: str = "127.0.0.1:50051", **options):
        super().__init__(target, options)
        self._channel = _channel.make_channel(self._options, aio=True)
        self._methods = {
            name: self._channel.unary_unary(name)
            for name in (_channel.NORMALIZE, _channel.REGISTER_WEIGHT, _channel.GET_SERVER_INFO,
                         _channel.HEALTH_CHECK)
        }
        self._normalize_stream = self._channel.stream_stream(_channel.NORMALIZE_STREAM)

    async def rms_norm(self, x, weight, eps: float = 1e-6, residual=None,
                       weight_offset: float = 0.0, *, timeout: Optional[float] = None,
                       request_id: str = ""):
        deadline = self._deadline(timeout)
        if self._max_request_bytes is None:
            await self._ask_limits(deadline)
        call = self._prepare(x, weight, eps, residual, weight_offset, request_id)
        try:
            response = await _drive(self._plan(call), self._rpc_until(deadline))
            return call.attached.outputs(response)
        finally:
            call.attached.release()

    async def register_weight(self, weight, *, timeout: Optional[float] = None):
        value, host, message = self._weight_to_register(weight)
        response = await self._rpc_until(self._deadline(timeout))(
            _channel.REGISTER_WEIGHT, _wire.register_weight_request(message))
        return self._registered(value, host, message, response)

    async def server_info(self, *, timeout: Optional[float] = None) -> ServerInfo:
        response = await self._rpc_until(self._deadline(timeout))(_channel.GET_SERVER_INFO, b"")
        return self._learned_info(response)

    async def health(self, *, timeout: Optional[float] = None) -> bool:
        response = await self._rpc_until(self._deadline(timeout))(_channel.HEALTH_CHECK, b"")
        return _wire.read_health_status(response) == _wire.HEALTH_SERVING

    def stream(self) -> "Stream":
        return Stream(self)

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def _ask_limits(self, deadline: float) -> None:
        try:
            response = await self._methods[_channel.GET_SERVER_INFO](
                b"", timeout=self._info_timeout(deadline),
                wait_for_ready=self._options.wait_for_ready)
        except grpc.RpcError:
            return  # the call itself will say what is wrong
        self._learned_info(response)

    def _rpc_until(self, deadline: float):
        methods, wait_for_ready = self._methods, self._options.wait_for_ready

        async def rpc(method: str, request: bytes) -> bytes:
            try:
                return await methods[method](request, timeout=self._remaining(deadline),
                                             wait_for_ready=wait_for_ready)
            except grpc.RpcError as e:
                raise from_rpc_error(e) from None

        return rpc


class Stream:
    """Many requests in flight on one NormalizeStream; normd.Stream's behaviour, with awaits.
    `await submit(...)` writes the request and returns an asyncio.Future of its result."""

    def __init__(self, client: Client):
        self._client = client
        self._write_lock = asyncio.Lock()  # grpc.aio allows one write at a time
        self._call = None
        self._pending = collections.deque()
        self._reader = None
        self._retries = []
        self._closed = False

    async def submit(self, x, weight, eps: float = 1e-6, residual=None,
                     weight_offset: float = 0.0, *, request_id: str = "") -> asyncio.Future:
        client = self._client
        deadline = client._deadline(None)
        if client._max_request_bytes is None:
            await client._ask_limits(deadline)
        call = client._prepare(x, weight, eps, residual, weight_offset, request_id)
        request = await _drive(_registration_then_request(client._plan(call)),
                               client._rpc_until(deadline))
        future = asyncio.get_running_loop().create_future()
        async with self._write_lock:
            if self._closed:
                raise ValueError("Stream: submit after close")
            if self._call is None:
                self._open()
            call_now, pending = self._call, self._pending
            pending.append((call, future))
            try:
                await call_now.write(request)
            except (grpc.RpcError, asyncio.InvalidStateError):
                pass  # the stream has failed: its reader resends or fails what it left unanswered
        return future

    async def rms_norm(self, *args, **kwargs):
        return await (await self.submit(*args, **kwargs))

    async def close(self) -> None:
        async with self._write_lock:
            self._closed = True
            call, reader = self._call, self._reader
            if call is not None:
                try:
                    await call.done_writing()
                except (grpc.RpcError, asyncio.InvalidStateError):
                    pass
        if reader is not None:
            await reader
        if self._retries:
            await asyncio.gather(*self._retries, return_exceptions=True)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    def _open(self) -> None:
        self._call = self._client._normalize_stream(
            wait_for_ready=self._client.options.wait_for_ready)
        self._pending = collections.deque()
        self._reader = asyncio.get_running_loop().create_task(
            self._read(self._call, self._pending))

    async def _read(self, call, pending) -> None:
        error = None
        resend = False
        try:
            while True:
                response = await call.read()
                if response is grpc.aio.EOF:
                    break
                prepared, future = pending.popleft()
                _settle(future, lambda: prepared.attached.outputs(response), prepared)
        except grpc.RpcError as e:
            error = from_rpc_error(e)
            resend = isinstance(error, (NotFound, Unavailable)) or _failed_by_a_write(e)
        if self._call is call:
            self._call = None  # later submits open a fresh stream
        left = list(pending)
        pending.clear()
        if left and error is None:
            error = Internal("stream ended before every response came")
        for prepared, future in left:
            if resend:
                self._retries.append(asyncio.ensure_future(self._retry(prepared, future)))
            else:
                _settle(future, error, prepared)

    async def _retry(self, prepared, future) -> None:
        try:
            response = await _drive(self._client._plan(prepared),
                                    self._client._rpc_until(self._client._deadline(None)))
        except NormdError as e:
            _settle(future, e, prepared)
        else:
            _settle(future, lambda: prepared.attached.outputs(response), prepared)


def _failed_by_a_write(error: grpc.RpcError) -> bool:
    """Whether grpc.aio ended the stream for a write that gRPC's core refused. A write after the
    server has ended the stream (NOT_FOUND for an evicted weight, say) fails there, and grpc.aio
    then gives the call its own status, INTERNAL "Internal error from Core", which can win over the
    server's (seen with grpcio 1.84). The requests left unanswered are then sent again, as after
    NOT_FOUND or UNAVAILABLE: a normalization has no side effects, and a request the server refused
    is refused again with the server's own error."""
    return (error.code() == grpc.StatusCode.INTERNAL
            and error.details() == "Internal error from Core")


def _settle(future, outcome, prepared) -> None:
    """Resolves `future` with outcome() or, when `outcome` is an exception, with that; then frees
    what the call held."""
    try:
        if isinstance(outcome, BaseException):
            raise outcome
        result = outcome()
    except Exception as e:  # noqa: BLE001 - the caller sees it through the future
        if not future.done():
            future.set_exception(e)
    else:
        if not future.done():
            future.set_result(result)
    finally:
        prepared.attached.release()
