"""The "shm" transport: host tensors through POSIX shared-memory regions registered with normd.

normd (started with --shared-memory=system) maps a region once and computes straight from and into
it, so a request carries references (region id, offset, length) instead of tensor bytes. The
protocol is the C++ client's (docs/SHARED_MEMORY.md): one OpenRegionSession per connection, kept
open for the client's life (regions belong to the session and are released when it ends, so a
client that dies leaks nothing in normd), then RegisterSystemRegion per region.

Each region is a file of /dev/shm created here, registered, and unlinked at once: normd keeps its
mapping, and nothing is left in /dev/shm even if this process is killed. A call takes a region
from a small pool (one per call in flight, so threads never share one), copies the input (and the
residual) in, names where the outputs go, and copies the outputs out into a new array or tensor:
one copy each way. Regions are reused and replaced by a bigger one when a call needs more.
"""

import mmap
import os
import secrets
import threading
from typing import List, Optional

import grpc
import numpy as np

from normd import _channel, _wire
from normd._tensors import HostTensor, make_output, to_host
from normd.errors import FailedPrecondition, from_rpc_error

OPEN_REGION_SESSION = f"/{_channel.SERVICE}/OpenRegionSession"
REGISTER_SYSTEM_REGION = f"/{_channel.SERVICE}/RegisterSystemRegion"
UNREGISTER_REGION = f"/{_channel.SERVICE}/UnregisterRegion"

_ALIGN = 64  # each tensor of a region starts on a cache line (and any dtype's alignment)
_MIN_REGION = 1 << 20
_SHM_DIR = "/dev/shm"


def _aligned(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def region_reference(field: int, region_id: str, offset: int, length: int) -> bytes:
    """A RegionReference-typed field (region_id 1, offset 2, byte_length 3)."""
    body = (_wire.string_field(1, region_id)
            + (_wire._key(2, 0) + _wire.varint(offset) if offset else b"")
            + (_wire._key(3, 0) + _wire.varint(length) if length else b""))
    return _wire.length_delimited(field, len(body)) + body


def _tensor_in_region(field: int, host: HostTensor, region_id: str, offset: int) -> bytes:
    """A Tensor-typed field with dtype, shape and a region reference (Tensor.region is field 4)."""
    header = _wire.tensor_header(host.dtype, tuple(host.shape), 0)
    body = header + region_reference(4, region_id, offset, host.nbytes)
    return _wire.length_delimited(field, len(body)) + body


class Region:
    """A registered shared-memory region: its mapping and normd's id for it."""

    def __init__(self, region_id: str, memory: mmap.mmap, size: int):
        self.id = region_id
        self.memory = memory
        self.size = size
        self.view = np.frombuffer(memory, np.uint8, size)

    def write(self, offset: int, host: HostTensor) -> None:
        self.view[offset:offset + host.nbytes] = np.frombuffer(host.data, np.uint8, host.nbytes)


REGISTER_CUDA_REGION = f"/{_channel.SERVICE}/RegisterCudaRegion"


class RegionSession:
    """The connection's one region session, shared by the shm and cuda-ipc transports: opened on
    first use and kept open until close() (normd releases the connection's regions when it ends)."""

    def __init__(self, channel):
        self._open_call = channel.unary_stream(OPEN_REGION_SESSION)
        self._register_system = channel.unary_unary(REGISTER_SYSTEM_REGION)
        self._register_cuda = channel.unary_unary(REGISTER_CUDA_REGION)
        self._unregister = channel.unary_unary(UNREGISTER_REGION)
        self._lock = threading.Lock()
        self._call = None
        self._closed = False

    def _ensure_open(self) -> None:
        with self._lock:
            if self._closed:
                raise FailedPrecondition("shared memory: the client is closed")
            if self._call is not None:
                return
            call = self._open_call(b"")
            try:
                next(call)  # the session is open once normd sends its one event
            except grpc.RpcError as e:
                raise from_rpc_error(e) from None
            except StopIteration:
                raise FailedPrecondition("OpenRegionSession: normd ended it at once") from None
            self._call = call

    def _register(self, method, request: bytes) -> str:
        self._ensure_open()
        try:
            response = method(request, timeout=30.0)
        except grpc.RpcError as e:
            raise from_rpc_error(e) from None
        return _wire.read_register_weight_response(response)  # field 1, a string there too

    def register_system(self, shm_name: str, size: int) -> str:
        return self._register(self._register_system,
                              _wire.string_field(1, shm_name) + _wire._key(3, 0)
                              + _wire.varint(size) + _wire.string_field(4, "normd-python"))

    def register_cuda(self, ipc_handle: bytes, device_uuid: bytes, offset: int,
                      size: int) -> str:
        request = (_wire.length_delimited(1, len(ipc_handle)) + ipc_handle
                   + _wire.length_delimited(2, len(device_uuid)) + device_uuid
                   + (_wire._key(3, 0) + _wire.varint(offset) if offset else b"")
                   + _wire._key(4, 0) + _wire.varint(size) + _wire.string_field(5, "normd-python"))
        return self._register(self._register_cuda, request)

    def unregister(self, region_id: str) -> None:
        try:
            self._unregister(_wire.string_field(1, region_id), timeout=5.0)
        except grpc.RpcError:
            pass  # the session's end releases it anyway

    def close(self) -> None:
        with self._lock:
            self._closed = True
            call, self._call = self._call, None
        if call is not None:
            call.cancel()


class RegionPool:
    """System regions of one session; a region serves one call at a time."""

    def __init__(self, session: RegionSession):
        self._session = session
        self._lock = threading.Lock()
        self._free: List[Region] = []
        self._all: List[Region] = []
        self._closed = False

    def acquire(self, size: int) -> Region:
        with self._lock:
            if self._closed:
                raise FailedPrecondition("transport 'shm': the client is closed")
            fitting = [r for r in self._free if r.size >= size]
            if fitting:
                region = min(fitting, key=lambda r: r.size)
                self._free.remove(region)
                return region
            too_small = self._free.pop() if self._free else None
        if too_small is not None:  # grow: replace a free region rather than keep both
            self._drop(too_small)
        return self._create(max(size, _MIN_REGION))

    def release(self, region: Region) -> None:
        with self._lock:
            if not self._closed:
                self._free.append(region)
                return
        self._drop(region)

    def _create(self, size: int) -> Region:
        name = f"normd-py-{os.getpid()}-{secrets.token_hex(8)}"
        path = os.path.join(_SHM_DIR, name)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.ftruncate(fd, size)
            memory = mmap.mmap(fd, size)
            try:
                region_id = self._session.register_system("/" + name, size)
            except Exception:
                memory.close()
                raise
        finally:
            os.close(fd)
            os.unlink(path)  # normd holds its own mapping now; nothing can be left behind
        region = Region(region_id, memory, size)
        with self._lock:
            self._all.append(region)
        return region

    def _drop(self, region: Region) -> None:
        with self._lock:
            if region in self._all:
                self._all.remove(region)
        self._session.unregister(region.id)
        region.view = None
        try:
            region.memory.close()
        except BufferError:
            pass  # an output array still views it; the mapping goes with the last reference

    def close(self) -> None:
        with self._lock:
            self._closed = True
            regions, self._free = list(self._all), []
        for region in regions:
            self._drop(region)


class _ShmAttached:
    __slots__ = ("input", "input_field", "residual_field", "output_field", "_pool", "_region",
                 "_out", "_residual_out")

    def __init__(self, pool: RegionPool, x, residual):
        self.input = host = to_host(x, "input")
        r = to_host(residual, "residual") if residual is not None else None
        if r is not None and (r.dtype, tuple(r.shape)) != (host.dtype, tuple(host.shape)):
            # normd names the mismatch; sending it inline lets it do so.
            raise _Mismatch()
        step = _aligned(host.nbytes)
        count = 4 if r is not None else 2  # input, [residual], output, [residual_out]
        self._pool, self._region = pool, pool.acquire(step * count)
        region = self._region
        region.write(0, host)
        self.input_field = [_tensor_in_region(_wire.INPUT, host, region.id, 0)]
        self._out = step * (2 if r is not None else 1)
        out = [region_reference(8, region.id, self._out, host.nbytes)]
        if r is not None:
            region.write(step, r)
            self.residual_field = [_tensor_in_region(_wire.RESIDUAL, r, region.id, step)]
            self._residual_out = step * 3
            out.append(region_reference(9, region.id, self._residual_out, host.nbytes))
        else:
            self.residual_field = []
            self._residual_out = None
        self.output_field = b"".join(out)

    def outputs(self, response: bytes):
        memory = self._region.memory
        y = make_output(memory, self._out, self.input)
        if self._residual_out is None:
            return y
        return y, make_output(memory, self._residual_out, self.input)

    def release(self) -> None:
        region, self._region = self._region, None
        if region is not None:
            self._pool.release(region)


class _Mismatch(Exception):
    """A call the shm transport leaves to bytes (normd then names what is wrong)."""


def is_local_target(target: str) -> bool:
    """Whether a target names this host: a unix: socket or a loopback address."""
    t = target
    for prefix in ("dns:///", "ipv4:", "ipv6:", "dns:"):
        if t.startswith(prefix):
            t = t[len(prefix):]
    if t.startswith("unix:") or t.startswith("unix-abstract:"):
        return True
    host = t.rsplit(":", 1)[0] if not t.startswith("[") else t[1:t.find("]")]
    return host == "localhost" or host.startswith("127.") or host == "::1"


def attach(pool: RegionPool, x, residual) -> Optional[_ShmAttached]:
    try:
        return _ShmAttached(pool, x, residual)
    except _Mismatch:
        return None
