"""Each failure as its typed exception, carrying the gRPC code and normd's own message."""

import socket

import grpc
import numpy as np
import pytest

import normd
from normd_server import NormdServer

X = np.ones((2, 64), np.float32)
W = np.ones(64, np.float32)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# (name, call, exception, code, a part of the message); the server answers each but the last.
SERVER_ERRORS = [
    ("negative eps", lambda c: c.rms_norm(X, W, eps=-1.0), normd.InvalidArgument,
     grpc.StatusCode.INVALID_ARGUMENT, "eps"),
    ("weight of another hidden size", lambda c: c.rms_norm(X, np.ones(32, np.float32)),
     normd.InvalidArgument, grpc.StatusCode.INVALID_ARGUMENT, "weight"),
    ("residual of another shape", lambda c: c.rms_norm(X, W, residual=np.ones((3, 64),
                                                                          np.float32)),
     normd.InvalidArgument, grpc.StatusCode.INVALID_ARGUMENT, "residual"),
    ("residual of another dtype", lambda c: c.rms_norm(X, W, residual=X.astype(np.float16)),
     normd.InvalidArgument, grpc.StatusCode.INVALID_ARGUMENT, "residual"),
    ("infinite weight_offset", lambda c: c.rms_norm(X, W, weight_offset=float("inf")),
     normd.InvalidArgument, grpc.StatusCode.INVALID_ARGUMENT, "weight_offset"),
    ("unknown weight id", lambda c: c.rms_norm(X, "no-such-weight"), normd.NotFound,
     grpc.StatusCode.NOT_FOUND, "no-such-weight"),
    ("expired deadline", lambda c: c.rms_norm(np.ones((1024, 4096), np.float32), W[:1].repeat(4096),
                                              timeout=1e-4),
     normd.DeadlineExceeded, grpc.StatusCode.DEADLINE_EXCEEDED, ""),
]


@pytest.mark.parametrize("name,call,exception,code,part", SERVER_ERRORS,
                         ids=[e[0] for e in SERVER_ERRORS])
def test_server_errors_raise_their_exception(client, name, call, exception, code, part):
    with pytest.raises(exception) as raised:
        call(client)
    assert raised.value.code == code and isinstance(raised.value, normd.NormdError)
    assert part in raised.value.message, raised.value.message


def test_builtin_bases():
    assert issubclass(normd.InvalidArgument, ValueError)
    assert issubclass(normd.DeadlineExceeded, TimeoutError)
    assert issubclass(normd.Unavailable, ConnectionError)
    assert issubclass(normd.NotFound, LookupError)


def test_no_server_is_unavailable():
    with normd.Client(f"127.0.0.1:{closed_port()}", max_attempts=1, timeout=5) as client:
        with pytest.raises(normd.Unavailable) as raised:
            client.rms_norm(X, W)
        assert raised.value.code == grpc.StatusCode.UNAVAILABLE and raised.value.message


def test_request_over_the_servers_limit():
    # The client learns --max-request-bytes from GetServerInfo and refuses before sending; told a
    # larger limit, it sends, and normd answers RESOURCE_EXHAUSTED itself.
    big = np.ones((64, 1024), np.float32)  # 256 KiB
    with NormdServer("--max-request-bytes=65536") as server:
        with normd.Client(server.address) as client:
            with pytest.raises(normd.ResourceExhausted, match="65536"):
                client.rms_norm(big, np.ones(1024, np.float32))
            assert client.max_request_bytes == 65536
        with normd.Client(server.address, max_request_bytes=1 << 30) as client:
            with pytest.raises(normd.ResourceExhausted) as raised:
                client.rms_norm(big, np.ones(1024, np.float32))
            # The server's gRPC layer refuses it (--max-request-bytes is its receive limit).
            assert raised.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "65536" in raised.value.message and "bytes exceeds" not in raised.value.message


@pytest.mark.parametrize("bad,exception,part", [
    (np.ones((2, 8), np.int32), normd.InvalidArgument, "int32"),
    (np.ones((2, 8), np.float64), normd.InvalidArgument, "float64"),
    ([[1.0, 2.0]], TypeError, "list"),
])
def test_inputs_the_client_cannot_encode(client, bad, exception, part):
    with pytest.raises(exception, match=part):
        client.rms_norm(bad, np.ones(8, np.float32))


def test_bad_options():
    with pytest.raises(ValueError, match="transport"):
        normd.Client("127.0.0.1:1", transport="carrier-pigeon")
    with pytest.raises(ValueError, match="timeout"):
        normd.Client("127.0.0.1:1", timeout=0)
    with pytest.raises(ValueError, match="target"):
        normd.Client("")
