"""normd: RMSNorm offload over gRPC, from Python. numpy arrays and torch tensors in, the same out.

    import normd
    client = normd.Client("127.0.0.1:50051")
    y = client.rms_norm(x, weight, eps=1e-6)
    y, h = client.rms_norm(x, weight, residual=r)

normd.aio.Client is the asyncio twin; normd.torch.RMSNorm a torch module whose forward calls normd.
The generated protobuf classes of normd.v1 are normd.v1.normd_pb2 (they need the protobuf runtime;
the client itself does not).
"""

from normd._channel import TLS
from normd._transport import TransportUnavailable
from normd._transport import available as available_transports
from normd._weights import Weight
from normd.client import Client
from normd.errors import (Cancelled, DeadlineExceeded, FailedPrecondition, Internal,
                          InvalidArgument, NormdError, NotFound, PermissionDenied,
                          ResourceExhausted, Unauthenticated, Unavailable, Unimplemented)
from normd.info import Device, ServerInfo
from normd.stream import Stream

__version__ = "0.1.0"


def __getattr__(name):
    # normd.aio and normd.torch load on first use: torch is a large import that numpy users need
    # not pay for.
    if name in ("aio", "torch"):
        import importlib

        return importlib.import_module(f"normd.{name}")
    raise AttributeError(f"module 'normd' has no attribute '{name}'")

__all__ = [
    "Cancelled", "Client", "DeadlineExceeded", "Device", "FailedPrecondition", "Internal",
    "InvalidArgument", "NormdError", "NotFound", "PermissionDenied", "ResourceExhausted",
    "ServerInfo", "Stream", "TLS", "Unauthenticated", "Unavailable", "Unimplemented", "Weight",
    "available_transports",
    "TransportUnavailable",
]
