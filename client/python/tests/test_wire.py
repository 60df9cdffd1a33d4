"""The hand-written wire format (normd._wire) against the generated classes, and the generated
classes against the proto."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from normd import _call, _transport, _wire
from normd._weights import Weight

pb = pytest.importorskip("normd.v1.normd_pb2", reason="the protobuf runtime is not installed")
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PROTO = os.path.join(REPO, "proto")


def request_bytes(x, weight, eps=1e-6, residual=None, weight_offset=0.0, request_id=""):
    attach = _transport.TransportChooser("bytes").attach
    return _call.prepare(attach, None, x, weight, eps, residual, weight_offset,
                         request_id).request()


CASES = [
    dict(x=np.arange(12, dtype=np.float32).reshape(3, 4), weight=np.ones(4, np.float32)),
    dict(x=np.ones((2, 1, 5), np.float16), weight=np.ones(5, np.float16), eps=0.0,
         residual=np.full((2, 1, 5), -1, np.float16), weight_offset=1.0, request_id="r-7"),
    dict(x=np.ones((1, 300), np.float32), weight="some-id", eps=-0.0, weight_offset=-2.5),
    dict(x=np.ones((129, 3), np.float32), weight=Weight("w", 1, 3, b""), request_id="ü"),
]


@pytest.mark.parametrize("case", CASES, ids=range(len(CASES)))
def test_request_equals_the_generated_serialization(case):
    ours = request_bytes(**case)
    parsed = pb.NormalizeRequest.FromString(ours)
    x = case["x"]
    assert parsed.input.dtype == (pb.DTYPE_FLOAT32 if x.dtype == np.float32 else pb.DTYPE_FLOAT16)
    assert list(parsed.input.shape) == list(x.shape) and parsed.input.data == x.tobytes()
    weight = case["weight"]
    if isinstance(weight, np.ndarray):
        assert parsed.WhichOneof("weight_source") == "weight"
        assert parsed.weight.data == weight.tobytes()
    else:
        assert parsed.weight_id == (weight if isinstance(weight, str) else weight.id)
    assert parsed.HasField("residual") == ("residual" in case)
    assert parsed.request_id == case.get("request_id", "")
    assert np.float32(parsed.weight_offset) == np.float32(case.get("weight_offset", 0.0))
    # Field order and default elision as protobuf's own serializer: byte for byte.
    assert ours == parsed.SerializeToString()


def response_message(dtype, shape, data, residual=None):
    message = pb.NormalizeResponse(
        output=pb.Tensor(dtype=dtype, shape=shape, data=data), request_id="abc",
        timing=pb.Timing(queue_us=-3, compute_us=1 << 40, batch_rows=7, batch_requests=2))
    if residual is not None:
        message.residual_out.CopyFrom(pb.Tensor(dtype=dtype, shape=shape, data=residual))
    return message.SerializeToString()


def test_response_parses_as_the_generated_class_wrote_it():
    data, residual = bytes(range(24)), bytes(range(100, 124))
    buf = response_message(pb.DTYPE_FLOAT16, [3, 4], data, residual)
    decoded = _wire.read_normalize_response(buf)
    assert decoded.request_id == "abc"
    assert decoded.timing == _wire.Timing(-3, 1 << 40, 7, 2)
    for span, expected in ((decoded.output, data), (decoded.residual_out, residual)):
        assert span.dtype == _wire.FLOAT16 and span.shape == (3, 4)
        assert buf[span.offset:span.offset + span.length] == expected


def test_outputs_take_the_general_parser_when_fields_come_in_another_order():
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    attached = _transport.BytesTransport().attach(x, x)
    y, h = (x * 2).tobytes(), (x * 3).tobytes()
    timing_first = (pb.NormalizeResponse(timing=pb.Timing(queue_us=5)).SerializeToString()
                    + pb.NormalizeResponse(residual_out=pb.Tensor(dtype=1, shape=[2, 4], data=h))
                    .SerializeToString()
                    + pb.NormalizeResponse(output=pb.Tensor(dtype=1, shape=[2, 4], data=y))
                    .SerializeToString())
    out, res = attached.outputs(timing_first)
    assert np.array_equal(out, x * 2) and np.array_equal(res, x * 3)


def test_a_response_of_the_wrong_shape_is_refused():
    x = np.ones((2, 4), np.float32)
    attached = _transport.BytesTransport().attach(x, None)
    with pytest.raises(Exception, match="shape"):
        attached.outputs(response_message(pb.DTYPE_FLOAT32, [4, 2], x.tobytes()))


def test_truncated_messages_raise_wire_errors():
    buf = response_message(pb.DTYPE_FLOAT32, [1, 2], bytes(8))
    for cut in (1, 5, len(buf) - 1):
        with pytest.raises(_wire.WireError):
            _wire.read_normalize_response(buf[:cut])


def test_server_info_and_health_and_register_responses():
    info = pb.ServerInfo(version="1.2", backend="cuda", max_hidden=65536,
                         max_request_bytes=1 << 28, max_batch_rows=8192, max_queue_delay_us=-1,
                         devices=[pb.Device(name="H200", memory_bytes=141 << 30, kind="cuda"),
                                  pb.Device(name="H200 #2", memory_bytes=1, kind="cuda")])
    fields = _wire.read_server_info(info.SerializeToString())
    assert fields["version"] == "1.2" and fields["max_queue_delay_us"] == -1
    assert [d["name"] for d in fields["devices"]] == ["H200", "H200 #2"]
    assert fields["devices"][0]["memory_bytes"] == 141 << 30
    response = pb.RegisterWeightResponse(weight_id="w-123").SerializeToString()
    assert _wire.read_register_weight_response(response) == "w-123"
    message = _wire.tensor_header(_wire.FLOAT32, (4,), 16) + bytes(16)
    request = pb.RegisterWeightRequest.FromString(_wire.register_weight_request(message))
    assert list(request.weight.shape) == [4] and request.weight.data == bytes(16)
    assert _wire.read_health_status(b"\x08\x01") == _wire.HEALTH_SERVING
    assert _wire.read_health_status(b"\x08\x02") == 2 and _wire.read_health_status(b"") == 0


def test_generated_code_matches_the_proto(tmp_path):
    protoc = shutil.which("protoc")
    if protoc is None:
        pytest.skip("protoc is not installed (Debian: protobuf-compiler), so the proto cannot be "
                    "compiled to compare")
    descriptor_set = tmp_path / "normd.pb"
    subprocess.run([protoc, f"--proto_path={PROTO}", f"--descriptor_set_out={descriptor_set}",
                    "normd/v1/normd.proto"], check=True)
    from google.protobuf import descriptor_pb2

    files = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set.read_bytes()).file
    assert len(files) == 1
    compiled = files[0]
    # A descriptor set carries each field's json_name; protoc leaves them out of Python code.
    messages = list(compiled.message_type)
    while messages:
        message = messages.pop()
        messages.extend(message.nested_type)
        for field in message.field:
            field.ClearField("json_name")
    generated = descriptor_pb2.FileDescriptorProto.FromString(pb.DESCRIPTOR.serialized_pb)
    assert generated == compiled, (
        "normd/v1/normd_pb2.py does not match proto/normd/v1/normd.proto: run "
        "client/python/tools/regen_proto.sh")


@pytest.mark.parametrize("implementation", ["python", "default"])
def test_generated_code_imports_with_each_protobuf_implementation(implementation):
    env = dict(os.environ)
    if implementation == "python":
        env["PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"] = "python"
    code = ("from normd.v1 import normd_pb2 as pb; "
            "m = pb.NormalizeRequest(weight_id='x', eps=0.5); "
            "assert pb.NormalizeRequest.FromString(m.SerializeToString()) == m; "
            "assert pb.DType.Name(3) == 'DTYPE_BFLOAT16'")
    package_root = os.path.dirname(os.path.dirname(pb.__file__))
    subprocess.run([sys.executable, "-c", code], check=True, env=env,
                   cwd=os.path.dirname(package_root))
