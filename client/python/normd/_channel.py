"""How a client connects: its options, and the grpcio channel (sync or grpc.aio) they turn into.

The channel carries normd's service config: round_robin over every address the target resolves to
(`dns:///normd.svc:50051` with several A records, or `ipv4:10.0.0.1:50051,10.0.0.2:50051`), and a
retryPolicy that retries UNAVAILABLE (and a server-side CANCELLED: a call that arrived in the last
instant of a drain) for the unary methods. RMSNorm is a pure function of its request, so a retry
never applies anything twice. NormalizeStream is not retried by gRPC: a stream that has seen answers
cannot be replayed; the client resends its unanswered requests itself.

grpcio's message limits are lifted (its receive limit is 4 MiB by default); the client checks each
request against the server's --max-request-bytes itself, asked with GetServerInfo on first use.
"""

import dataclasses
import json
from typing import Optional

import grpc

# normd's default --max-request-bytes, used until the server has been asked.
DEFAULT_MAX_REQUEST_BYTES = 256 << 20
# gRPC keeps each outgoing message for replay up to this size (256 KiB by default, which would leave
# a 64 x 4096 bf16 request unretried); 64 MiB bounds the memory that may take.
_RETRY_BUFFER_BYTES = 64 << 20

SERVICE = "normd.v1.Normalizer"
NORMALIZE = f"/{SERVICE}/Normalize"
NORMALIZE_STREAM = f"/{SERVICE}/NormalizeStream"
REGISTER_WEIGHT = f"/{SERVICE}/RegisterWeight"
GET_SERVER_INFO = f"/{SERVICE}/GetServerInfo"
HEALTH_CHECK = "/grpc.health.v1.Health/Check"


@dataclasses.dataclass(frozen=True)
class TLS:
    """TLS towards a normd started with --tls-cert/--tls-key (and, for mutual TLS,
    --tls-client-ca). `ca_file`: PEM certificates the server's must chain to (None: gRPC's default
    roots). `cert_file`/`key_file`: the client's certificate and key for mutual TLS, both or
    neither. `server_name`: the name checked against the server's certificate when it differs
    from the target's host."""

    ca_file: Optional[str] = None
    cert_file: Optional[str] = None
    key_file: Optional[str] = None
    server_name: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Options:
    """Every option of a Client (normd.Client and normd.aio.Client take them as keywords)."""

    target: str = "127.0.0.1:50051"
    timeout: float = 30.0  # seconds; each call's deadline unless the call gives its own
    max_request_bytes: int = 0  # 0: ask the server (GetServerInfo) on first use
    max_attempts: int = 5  # per unary call for UNAVAILABLE, the first included; 1: no retries
    initial_backoff: float = 0.02
    max_backoff: float = 1.0
    keepalive_time: float = 30.0
    keepalive_timeout: float = 10.0
    max_reconnect_backoff: float = 2.0
    # Seconds one connection attempt (TCP, TLS, the HTTP/2 settings exchange) gets before it is
    # given up and retried after the backoff: gRPC's own default.
    connect_timeout: float = 20.0
    wait_for_ready: bool = False  # wait (up to the deadline) for a connection instead of failing
    own_connection: bool = False  # a connection of this client's own, not shared by target
    tls: Optional[TLS] = None
    transport: str = "auto"
    cache_weights: bool = True

    def validate(self) -> None:
        if not self.target:
            raise ValueError("target: empty; expected HOST:PORT (or dns:///HOST:PORT, unix:PATH)")
        if not self.timeout > 0:
            raise ValueError(f"timeout: {self.timeout}; must be positive (seconds)")
        if self.max_request_bytes < 0:
            raise ValueError(f"max_request_bytes: {self.max_request_bytes}; must be >= 0")
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts: {self.max_attempts}; must be >= 1")
        # gRPC raises anything under 100 ms to 100 ms without a word; refusing says so instead.
        if not self.connect_timeout >= 0.1:
            raise ValueError(f"connect_timeout: {self.connect_timeout}; must be at least 0.1 "
                             "(seconds)")


def _seconds(value: float) -> str:
    return f"{value:.3f}s"


def service_config(options: Options) -> dict:
    unary = [{"service": SERVICE, "method": m}
             for m in ("Normalize", "RegisterWeight", "GetServerInfo")]
    unary.append({"service": "grpc.health.v1.Health", "method": "Check"})
    method = {"name": unary}
    if options.max_attempts > 1:
        method["retryPolicy"] = {
            "maxAttempts": min(options.max_attempts, 5),  # gRPC's own cap
            "initialBackoff": _seconds(options.initial_backoff),
            "maxBackoff": _seconds(options.max_backoff),
            "backoffMultiplier": 2,
            "retryableStatusCodes": ["UNAVAILABLE", "CANCELLED"],
        }
    return {"loadBalancingConfig": [{"round_robin": {}}], "methodConfig": [method]}


def _may_use_regions(options: Options) -> bool:
    """Shared-memory regions belong to one connection's session, so a client that may register
    them keeps a connection of its own (grpcio otherwise shares one between channels to the same
    target, and normd allows one session per connection)."""
    from normd._shm import is_local_target

    return options.transport in ("shm", "cuda-ipc") or (options.transport == "auto"
                                          and is_local_target(options.target))


def channel_arguments(options: Options) -> list:
    def ms(seconds: float) -> int:
        return int(seconds * 1000)

    arguments = [
        ("grpc.service_config", json.dumps(service_config(options))),
        ("grpc.enable_retries", 1),
        ("grpc.max_send_message_length", -1),
        ("grpc.max_receive_message_length", -1),
        ("grpc.per_rpc_retry_buffer_size", _RETRY_BUFFER_BYTES),
        ("grpc.keepalive_time_ms", ms(options.keepalive_time)),
        ("grpc.keepalive_timeout_ms", ms(options.keepalive_timeout)),
        # Idle connections are not pinged: servers answer frequent idle pings with GOAWAY.
        ("grpc.keepalive_permit_without_calls", 0),
        ("grpc.initial_reconnect_backoff_ms", 100),
        # gRPC reads this as the least time a connection attempt gets, not as a backoff: at 100 ms
        # a server slower than that to send its HTTP/2 settings could never be connected to.
        ("grpc.min_reconnect_backoff_ms", ms(options.connect_timeout)),
        # gRPC's default of 120 s would leave a restarted replica unused for minutes.
        ("grpc.max_reconnect_backoff_ms", ms(options.max_reconnect_backoff)),
    ]
    if options.own_connection or _may_use_regions(options):
        arguments.append(("grpc.use_local_subchannel_pool", 1))
    if options.tls is not None and options.tls.server_name:
        arguments.append(("grpc.ssl_target_name_override", options.tls.server_name))
    return arguments


def _read_pem(what: str, path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            contents = f.read()
    except OSError as e:
        raise ValueError(f"{what}: cannot read '{path}' ({e.strerror})") from None
    if b"-----BEGIN" not in contents:
        raise ValueError(f"{what}: '{path}' holds no PEM block")
    return contents


def credentials(tls: TLS) -> grpc.ChannelCredentials:
    if bool(tls.cert_file) != bool(tls.key_file):
        raise ValueError("tls: a client certificate needs its key and a key its certificate "
                         "(cert_file with key_file)")
    roots = _read_pem("tls.ca_file", tls.ca_file) if tls.ca_file else None
    cert = _read_pem("tls.cert_file", tls.cert_file) if tls.cert_file else None
    key = _read_pem("tls.key_file", tls.key_file) if tls.key_file else None
    return grpc.ssl_channel_credentials(root_certificates=roots, private_key=key,
                                        certificate_chain=cert)


def make_channel(options: Options, aio: bool = False):
    """A grpcio channel (grpc.aio's when `aio`) for `options`."""
    module = grpc.aio if aio else grpc
    arguments = channel_arguments(options)
    if options.tls is None:
        return module.insecure_channel(options.target, options=arguments)
    return module.secure_channel(options.target, credentials(options.tls), options=arguments)
