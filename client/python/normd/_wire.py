"""normd.v1's messages encoded and decoded by hand (proto/normd/v1/normd.proto).

Why not the generated classes: protobuf's Python runtimes copy a bytes field into the message when
it is set, and again when the message is serialized or the field is read, so a 32 MiB tensor would
be copied three times on its way out and twice on its way back. Here a request is assembled from
chunks with one copy of each tensor (the join into the bytes object grpcio sends), and a response's
tensors are located inside the bytes grpcio received, without a copy. The client needs no protobuf
runtime at all; tests check every layout here against normd.v1.normd_pb2 in both directions.

Fields are written in field-number order and proto3 defaults are left out, as protobuf's own
serializers do, so that an encoded request equals the generated class's SerializeToString().
"""

import functools
import struct
from typing import List, NamedTuple, Optional, Tuple

FLOAT32, FLOAT16, BFLOAT16 = 1, 2, 3  # normd.v1.DType
DTYPE_NAMES = {FLOAT32: "float32", FLOAT16: "float16", BFLOAT16: "bfloat16"}
ITEMSIZE = {FLOAT32: 4, FLOAT16: 2, BFLOAT16: 2}

_VARINT, _FIXED64, _LEN, _FIXED32 = 0, 1, 2, 5
_SMALL_VARINTS = [bytes([n]) for n in range(128)]


class WireError(ValueError):
    """A message that does not parse as the proto says."""


def varint(n: int) -> bytes:
    if 0 <= n < 128:
        return _SMALL_VARINTS[n]
    n &= 0xFFFFFFFFFFFFFFFF  # negative int64: ten bytes of two's complement, as protobuf writes
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _key(field: int, wire_type: int) -> bytes:
    return varint(field << 3 | wire_type)


def length_delimited(field: int, payload_len: int) -> bytes:
    """The key and length of a bytes, string or message field whose payload follows."""
    return _key(field, _LEN) + varint(payload_len)


def tensor_header(dtype: int, shape: Tuple[int, ...], data_len: int) -> bytes:
    """A Tensor message up to its data bytes (data is its last field, so they follow directly)."""
    parts = [_key(1, _VARINT), varint(dtype)] if dtype else []
    if shape:
        packed = b"".join(varint(d) for d in shape)
        parts += [_key(2, _LEN), varint(len(packed)), packed]
    if data_len:
        parts += [_key(3, _LEN), varint(data_len)]
    return b"".join(parts)


@functools.lru_cache(maxsize=1024)
def tensor_prefix(field: int, dtype: int, shape: Tuple[int, ...], data_len: int) -> bytes:
    """A Tensor-typed field up to its data bytes: key, length and header. Cached: the shapes of a
    caller's calls repeat, and the response's output field starts with the request's input
    field's prefix (both are field 1)."""
    header = tensor_header(dtype, shape, data_len)
    return length_delimited(field, len(header) + data_len) + header


def tensor_field(field: int, dtype: int, shape: Tuple[int, ...], data, data_len: int) -> List:
    """Chunks of a Tensor-typed field: b"".join() of them copies `data` (any buffer) once."""
    prefix = tensor_prefix(field, dtype, shape, data_len)
    return [prefix, data] if data_len else [prefix]


def string_field(field: int, value: str) -> bytes:
    if not value:
        return b""
    raw = value.encode("utf-8")
    return length_delimited(field, len(raw)) + raw


def float_field(field: int, value: float, name: str) -> bytes:
    try:
        packed = struct.pack("<f", value)
    except (OverflowError, struct.error, TypeError) as e:
        raise ValueError(f"{name}: {value!r} is not a float32 ({e})") from None
    return b"" if packed == b"\0\0\0\0" else _key(field, _FIXED32) + packed


# NormalizeRequest's fields, in order: input 1, weight 2 | weight_id 3, eps 4, residual 5,
# weight_offset 6, request_id 7.
INPUT, WEIGHT, WEIGHT_ID, EPS, RESIDUAL, WEIGHT_OFFSET, REQUEST_ID = 1, 2, 3, 4, 5, 6, 7
# NormalizeResponse's tensors.
OUTPUT, RESIDUAL_OUT = 1, 2


def read_varint(buf, pos: int) -> Tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result, shift = b & 0x7F, 7
    while True:
        pos += 1
        b = buf[pos]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos + 1
        shift += 7
        if shift > 63:
            raise WireError("varint longer than ten bytes")


def _signed64(n: int) -> int:
    return n - (1 << 64) if n >= 1 << 63 else n


def fields(buf, start: int = 0, end: Optional[int] = None):
    """Yields (field, wire_type, value) for a message in buf[start:end]. A varint's value is the
    int; a length-delimited field's is (offset, end) into buf; fixed32/64 give their raw bytes."""
    end = len(buf) if end is None else end
    pos = start
    try:
        while pos < end:
            key, pos = read_varint(buf, pos)
            wire_type = key & 7
            if wire_type == _VARINT:
                value, pos = read_varint(buf, pos)
            elif wire_type == _LEN:
                n, pos = read_varint(buf, pos)
                value = (pos, pos + n)
                pos += n
            elif wire_type == _FIXED32:
                value, pos = bytes(buf[pos : pos + 4]), pos + 4
            elif wire_type == _FIXED64:
                value, pos = bytes(buf[pos : pos + 8]), pos + 8
            else:
                raise WireError(f"wire type {wire_type} (groups are not used by normd.v1)")
            yield key >> 3, wire_type, value
    except IndexError:
        raise WireError("message ends inside a field") from None
    if pos != end:
        raise WireError("a field runs past the end of its message")


def _text(buf, span) -> str:
    return bytes(buf[span[0] : span[1]]).decode("utf-8")


class TensorSpan(NamedTuple):
    """A Tensor of a received message: its data is buf[offset : offset + length]."""

    dtype: int
    shape: Tuple[int, ...]
    offset: int
    length: int


def read_tensor(buf, span) -> TensorSpan:
    dtype, shape, offset, length = 0, [], span[1], 0
    for field, wire_type, value in fields(buf, *span):
        if field == 1 and wire_type == _VARINT:
            dtype = value
        elif field == 2 and wire_type == _LEN:  # packed, as proto3 writes repeated int64
            pos, stop = value
            while pos < stop:
                dim, pos = read_varint(buf, pos)
                shape.append(_signed64(dim))
        elif field == 2 and wire_type == _VARINT:  # unpacked, which parsers must accept too
            shape.append(_signed64(value))
        elif field == 3 and wire_type == _LEN:
            offset, length = value[0], value[1] - value[0]
    return TensorSpan(dtype, tuple(shape), offset, length)


class Timing(NamedTuple):
    """How normd handled a request: its queue wait, the compute time of the launch it rode in, and
    the rows and requests of that launch."""

    queue_us: int = 0
    compute_us: int = 0
    batch_rows: int = 0
    batch_requests: int = 0


class NormalizeResponse(NamedTuple):
    output: Optional[TensorSpan]
    residual_out: Optional[TensorSpan]
    request_id: str
    timing: Timing


def read_normalize_response(buf) -> NormalizeResponse:
    output = residual_out = None
    request_id, timing = "", Timing()
    for field, wire_type, value in fields(buf):
        if wire_type != _LEN:
            continue
        if field == 1:
            output = read_tensor(buf, value)
        elif field == 2:
            residual_out = read_tensor(buf, value)
        elif field == 3:
            request_id = _text(buf, value)
        elif field == 4:
            numbers = [0, 0, 0, 0]
            for f, wt, v in fields(buf, *value):
                if 1 <= f <= 4 and wt == _VARINT:
                    numbers[f - 1] = _signed64(v)
            timing = Timing(*numbers)
    return NormalizeResponse(output, residual_out, request_id, timing)


def register_weight_request(tensor_message: bytes) -> bytes:
    """RegisterWeightRequest{weight = the Tensor message}."""
    return length_delimited(1, len(tensor_message)) + tensor_message


def read_register_weight_response(buf) -> str:
    for field, wire_type, value in fields(buf):
        if field == 1 and wire_type == _LEN:
            return _text(buf, value)
    return ""


def read_server_info(buf) -> dict:
    """ServerInfo as a dict of its field names; devices as a list of dicts."""
    info = {"version": "", "backend": "", "devices": [], "max_hidden": 0,
            "max_request_bytes": 0, "max_batch_rows": 0, "max_queue_delay_us": 0}
    numbers = {4: "max_hidden", 5: "max_request_bytes", 6: "max_batch_rows",
               7: "max_queue_delay_us"}
    for field, wire_type, value in fields(buf):
        if field in (1, 2) and wire_type == _LEN:
            info["version" if field == 1 else "backend"] = _text(buf, value)
        elif field == 3 and wire_type == _LEN:
            device = {"name": "", "memory_bytes": 0, "kind": ""}
            for f, wt, v in fields(buf, *value):
                if f == 1 and wt == _LEN:
                    device["name"] = _text(buf, v)
                elif f == 2 and wt == _VARINT:
                    device["memory_bytes"] = _signed64(v)
                elif f == 3 and wt == _LEN:
                    device["kind"] = _text(buf, v)
            info["devices"].append(device)
        elif field in numbers and wire_type == _VARINT:
            info[numbers[field]] = _signed64(value)
    return info


# grpc.health.v1: HealthCheckRequest{service = ""} is the empty message; the response's field 1 is
# the status enum (hand-read, so that no second copy of health.proto enters protobuf's default pool
# next to grpcio-health-checking's).
HEALTH_SERVING = 1


def read_health_status(buf) -> int:
    for field, wire_type, value in fields(buf):
        if field == 1 and wire_type == _VARINT:
            return value
    return 0
