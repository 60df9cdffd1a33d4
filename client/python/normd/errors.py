"""Exceptions: one class per gRPC status code, each carrying the code and normd's message.

normd's messages name the field and the numbers (`input.data: 10 bytes; shape [4, 32] of float16
needs 128 x 2 = 256 bytes`), so the message is kept as the server wrote it. Where a Python builtin
means the same thing, the class derives from it too: InvalidArgument is a ValueError,
DeadlineExceeded a TimeoutError, Unavailable a ConnectionError, NotFound a LookupError.

The client raises some of them itself, before sending: InvalidArgument for arguments it cannot
encode, ResourceExhausted for a request over the server's --max-request-bytes.
"""

import grpc


class NormdError(Exception):
    """A call to normd failed. `code` is the grpc.StatusCode, `message` the server's message."""

    code = grpc.StatusCode.UNKNOWN

    def __init__(self, message: str, code: grpc.StatusCode = None):
        if code is not None:
            self.code = code
        self.message = message
        super().__init__(f"{self.code.name}: {message}")


class InvalidArgument(NormdError, ValueError):
    code = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(NormdError, LookupError):
    code = grpc.StatusCode.NOT_FOUND


class ResourceExhausted(NormdError):
    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class DeadlineExceeded(NormdError, TimeoutError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class Unavailable(NormdError, ConnectionError):
    code = grpc.StatusCode.UNAVAILABLE


class Cancelled(NormdError):
    code = grpc.StatusCode.CANCELLED


class FailedPrecondition(NormdError):
    code = grpc.StatusCode.FAILED_PRECONDITION


class Unauthenticated(NormdError):
    code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDenied(NormdError):
    code = grpc.StatusCode.PERMISSION_DENIED


class Unimplemented(NormdError):
    code = grpc.StatusCode.UNIMPLEMENTED


class Internal(NormdError):
    code = grpc.StatusCode.INTERNAL


_BY_CODE = {
    cls.code: cls
    for cls in (InvalidArgument, NotFound, ResourceExhausted, DeadlineExceeded, Unavailable,
                Cancelled, FailedPrecondition, Unauthenticated, PermissionDenied, Unimplemented,
                Internal)
}


def error_for(code: grpc.StatusCode, message: str) -> NormdError:
    cls = _BY_CODE.get(code)
    return cls(message) if cls else NormdError(message, code)


def from_rpc_error(error: grpc.RpcError) -> NormdError:
    """The typed exception for a failed grpcio call (sync or grpc.aio)."""
    code = error.code() if callable(getattr(error, "code", None)) else grpc.StatusCode.UNKNOWN
    details = error.details() if callable(getattr(error, "details", None)) else str(error)
    return error_for(code or grpc.StatusCode.UNKNOWN, details or "")
