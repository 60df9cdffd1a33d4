"""normd.Stream: many Normalize requests in flight on one NormalizeStream, answered in order.

    with client.stream() as stream:
        futures = [stream.submit(x, weight) for x in batches]    # returns at once
        ys = [f.result() for f in futures]                        # in submission order

submit() marshals the request and queues it; grpcio writes the queue in order, normd answers in
order, and a reader thread resolves each answer's future (concurrent.futures.Future). No per-call
round trip: throughput is bounded by normd, not by the latency of each call. At most
`max_in_flight` requests wait for answers; submit() blocks beyond that.

When the stream fails with NOT_FOUND (a registered weight was evicted, or the server restarted) or
UNAVAILABLE (the connection broke), its unanswered requests are sent again as unary calls, which
register the weight again or retry on a working connection (RMSNorm is idempotent); later submits
open a fresh stream. Any other failure fails the unanswered futures with its exception. Streams
carry no deadline. A Stream may be used from several threads.
"""

import collections
import concurrent.futures
import queue
import threading

import grpc

from normd import _base, _channel
from normd.errors import Internal, NormdError, NotFound, Unavailable, from_rpc_error

_END = object()  # closes a stream's request queue


class _Generation:
    """One gRPC NormalizeStream and the requests sent on it, oldest first."""

    def __init__(self):
        self.requests = queue.SimpleQueue()
        self.pending = collections.deque()  # (PreparedCall, Future), written or queued, in order
        self.dead = False

    def request_iterator(self):
        while True:
            item = self.requests.get()
            if item is _END:
                return
            yield item


class Stream:
    def __init__(self, client, max_in_flight: int = 128):
        self._client = client
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_in_flight)
        self._current = None
        self._readers = []
        self._closed = False

    def submit(self, x, weight, eps: float = 1e-6, residual=None, weight_offset: float = 0.0, *,
               request_id: str = "") -> concurrent.futures.Future:
        """Queues one request (the arguments of Client.rms_norm); its future gives what rms_norm
        would return, or raises its exception."""
        client = self._client
        deadline = client._deadline(None)
        if client._max_request_bytes is None:
            client._ask_limits(deadline)
        call = client._prepare(x, weight, eps, residual, weight_offset, request_id)
        # A weight's first use registers it now; the stream then names it by id.
        request = _base.drive_sync(_registration_then_request(client._plan(call)),
                                   client._rpc_until(deadline))
        future = concurrent.futures.Future()
        self._slots.acquire()
        future.add_done_callback(lambda _: self._slots.release())
        with self._lock:
            if self._closed:
                self._slots.release()
                raise ValueError("Stream: submit after close")
            generation = self._current
            if generation is None or generation.dead:
                generation = self._open()
            generation.pending.append((call, future))
            generation.requests.put(request)
        return future

    def rms_norm(self, *args, **kwargs):
        """submit(...).result()."""
        return self.submit(*args, **kwargs).result()

    def close(self) -> None:
        """Ends the stream and waits until every submitted request has its answer."""
        with self._lock:
            self._closed = True
            generation, self._current = self._current, None
            readers = list(self._readers)
        if generation is not None:
            generation.requests.put(_END)
        for reader in readers:
            reader.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _open(self) -> _Generation:
        generation = _Generation()
        responses = self._client._normalize_stream(
            generation.request_iterator(), wait_for_ready=self._client.options.wait_for_ready)
        reader = threading.Thread(target=self._read, args=(generation, responses),
                                  name="normd-stream-reader", daemon=True)
        self._current = generation
        self._readers = [r for r in self._readers if r.is_alive()] + [reader]
        reader.start()
        return generation

    def _read(self, generation: _Generation, responses) -> None:
        error = None
        try:
            for response in responses:
                with self._lock:
                    call, future = generation.pending.popleft()
                _resolve(future, lambda: call.attached.outputs(response), call)
        except grpc.RpcError as e:
            error = from_rpc_error(e)
        with self._lock:
            generation.dead = True
            left = list(generation.pending)
            generation.pending.clear()
        generation.requests.put(_END)  # frees grpcio's thread that reads the request queue
        if left and error is None:
            error = Internal("stream ended before every response came")
        for call, future in left:
            if isinstance(error, (NotFound, Unavailable)):
                _resolve(future, lambda: self._client._finish_unary(call), call)
            else:
                call.attached.release()
                future.set_exception(error)


def _registration_then_request(steps):
    """Runs a call's plan up to its first Normalize and returns that request's bytes (the
    registration of a weight's first use happens on the way, with the plan's own handling of its
    failures)."""
    response, error = None, None
    while True:
        method, request = steps.send(response) if error is None else steps.throw(error)
        if method == _channel.NORMALIZE:
            steps.close()
            return request
        try:
            response, error = (yield method, request), None
        except NormdError as e:
            response, error = None, e


def _resolve(future, compute, call) -> None:
    try:
        future.set_result(compute())
    except BaseException as e:  # noqa: BLE001 - the caller sees it through the future
        future.set_exception(e)
    finally:
        call.attached.release()
