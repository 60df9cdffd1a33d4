"""One Normalize call from the caller's arguments to its result, shared by the sync and asyncio
clients.

`prepare` marshals what needs no server: the transport places the tensors, and the weight is
resolved to an id (a Weight handle, a cached registration) or kept for registration or inline
sending. A call whose weight needs nothing more is one Normalize RPC, which the clients send
directly. Otherwise `plan` runs the call as a generator of the RPCs it needs: it yields
`(method, request_bytes)`, and the client's driver sends that RPC and resumes it with the response
bytes, or throws the typed NormdError into it. The retry logic is written once, and the sync and
asyncio drivers stay a dozen lines each.

The weight's path, as the C++ client's: a first use registers it (the id is then cached); a
NOT_FOUND for an id registers the same bytes again and retries with the id (ids are content
digests, so it is the same id); a second NOT_FOUND (a load balancer sent the retry to yet another
replica) sends the weight inline, and that weight travels inline from then on.
"""

import functools
from typing import Optional

from normd import _channel, _wire
from normd._tensors import weight_to_host
from normd._transport import Attached
from normd._weights import Weight, WeightCache, tensor_message
from normd.errors import NotFound, ResourceExhausted


@functools.lru_cache(maxsize=256)
def _scalars(eps: float, weight_offset: float, request_id: str):
    """(eps field, the fields after the residual) of a request."""
    return (_wire.float_field(_wire.EPS, eps, "eps"),
            _wire.float_field(_wire.WEIGHT_OFFSET, weight_offset, "weight_offset")
            + _wire.string_field(_wire.REQUEST_ID, request_id))


class PreparedCall:
    __slots__ = ("attached", "scalars", "weight", "weight_field", "pending")

    def __init__(self, attached: Attached, scalars):
        self.attached = attached
        self.scalars = scalars
        self.weight: Optional[Weight] = None  # a registration (can be registered again)
        self.weight_field = b""  # the request's weight_id or inline weight field
        self.pending = None  # (value, host, message) of a weight to register before sending

    def request(self, weight_field: Optional[bytes] = None) -> bytes:
        attached = self.attached
        eps, rest = self.scalars
        weight_field = self.weight_field if weight_field is None else weight_field
        # The one copy of the tensors on their way out.
        if attached.residual_field:
            return b"".join([*attached.input_field, weight_field, eps, *attached.residual_field,
                             rest, attached.output_field])
        return b"".join([*attached.input_field, weight_field, eps, rest, attached.output_field])

    def use(self, weight: Weight) -> None:
        if weight.inline:
            self.weight_field = inline_field(weight.tensor_message)
        else:
            self.weight = weight
            self.weight_field = weight.id_field


def inline_field(message: bytes) -> bytes:
    return _wire.length_delimited(_wire.WEIGHT, len(message)) + message


def prepare(attach, cache: Optional[WeightCache], x, weight, eps: float, residual,
            weight_offset: float, request_id: str) -> PreparedCall:
    attached = attach(x, residual)
    try:
        scalars = _scalars(eps, weight_offset, request_id)
    except TypeError:  # unhashable arguments: not cached (and float_field names the problem)
        scalars = _scalars.__wrapped__(eps, weight_offset, request_id)
    call = PreparedCall(attached, scalars)
    if type(weight) is Weight:
        call.use(weight)
    elif type(weight) is str:
        call.weight_field = _wire.string_field(_wire.WEIGHT_ID, weight)
    else:
        input_dtype = attached.input.dtype
        known = cache.find(weight, input_dtype) if cache is not None else None
        if known is not None:
            call.use(known)
        else:
            _resolve_new_weight(call, cache, weight, input_dtype)
    return call


def _resolve_new_weight(call: PreparedCall, cache: Optional[WeightCache], value, input_dtype):
    host = weight_to_host(value, input_dtype)
    message = tensor_message(host)
    if cache is None:
        call.weight_field = inline_field(message)
        return
    known = cache.find_content(message)
    if known is not None:
        cache.remember(value, known)
        call.use(known)
    else:
        call.pending = (value, host, message)


def check_size(request: bytes, max_request_bytes: int) -> bytes:
    if len(request) > max_request_bytes:
        raise ResourceExhausted(
            f"request: {len(request)} bytes exceeds the server's limit of {max_request_bytes} "
            "(--max-request-bytes); split the rows")
    return request


def plan(call: PreparedCall, cache: Optional[WeightCache], max_request_bytes: int):
    """The RPCs of one call (see the module's comment); returns the Normalize response's bytes."""
    if call.pending is not None:
        value, host, message = call.pending
        call.pending = None
        try:
            response = yield _channel.REGISTER_WEIGHT, _wire.register_weight_request(message)
        except ResourceExhausted:  # larger than the server keeps (--max-weight-bytes): inline
            call.weight_field = inline_field(message)
        else:
            weight_id = _wire.read_register_weight_response(response)
            call.use(Weight(weight_id, host.dtype, host.shape[-1] if host.shape else 0, message))
            cache.remember(value, call.weight)
    request = check_size(call.request(), max_request_bytes)
    try:
        return (yield _channel.NORMALIZE, request)
    except NotFound:
        if call.weight is None:
            raise
    return (yield from recover(call, request))


def recover(call: PreparedCall, request: bytes):
    """After a NOT_FOUND for call.weight: register it again and retry; then send it inline, and
    from then on (the registration and the retry went to different replicas: with round_robin over
    two, they always would)."""
    yield _channel.REGISTER_WEIGHT, _wire.register_weight_request(call.weight.tensor_message)
    try:
        return (yield _channel.NORMALIZE, request)
    except NotFound:
        pass
    call.weight.inline = True
    return (yield _channel.NORMALIZE, call.request(inline_field(call.weight.tensor_message)))

