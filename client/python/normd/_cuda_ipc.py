"""The "cuda-ipc" transport: torch CUDA tensors stay on the GPU; normd runs the kernel on them.

A request names its input, residual and outputs as CUDA regions: allocations of this process
exported with a CUDA IPC handle (PyTorch's own export, `untyped_storage()._share_cuda_()`, which
gives the handle of the caching allocator's block and the storage's offset in it) and registered
with RegisterCudaRegion on the connection's region session (normd._shm.RegionSession). The
outputs are new tensors on the input's device that normd writes in place.

Ordering is synchronous: the client waits for its current stream before sending (normd must see
the finished input), and normd has finished writing when it answers. Each call registers its
tensors and unregisters them when done: PyTorch's allocator may free or reuse a block after the
call, so a registration is never kept past the tensors it names.

Nothing here imports torch at module level: the package imports without torch or CUDA.
"""

import re
from typing import List

from normd import _wire
from normd._shm import RegionSession, region_reference
from normd._tensors import torch_module
from normd.errors import InvalidArgument

_UUID = re.compile(r"([0-9a-f]{8})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{12})")
_DTYPES = {}
_uuids = {}


def _dtype_code(tensor) -> int:
    if not _DTYPES:
        torch = torch_module()
        _DTYPES.update({torch.float32: _wire.FLOAT32, torch.float16: _wire.FLOAT16,
                        torch.bfloat16: _wire.BFLOAT16})
    code = _DTYPES.get(tensor.dtype)
    if code is None:
        raise InvalidArgument(f"input: dtype {tensor.dtype} is not supported; normd takes "
                              "float32, float16 or bfloat16")
    return code


def device_uuid(device) -> bytes:
    """The 16 bytes of a CUDA device's UUID (normd finds the GPU by it, not by ordinal)."""
    index = device.index if device.index is not None else torch_module().cuda.current_device()
    if index not in _uuids:
        text = str(torch_module().cuda.get_device_properties(index).uuid).lower()
        found = _UUID.search(text)
        if found is None:
            raise InvalidArgument(f"cuda device {index}: cannot read its UUID from {text!r}")
        _uuids[index] = bytes.fromhex("".join(found.groups()))
    return _uuids[index]


# PyTorch's export of a block (CUDACachingAllocator's shareIpcHandle) is, since PyTorch 2.2, a
# version byte, a type byte and the type's payload; before that it was the bare handle.
_CUDA_IPC_HANDLE_BYTES = 64  # sizeof(cudaIpcMemHandle_t)
_CUDA_MALLOC_BLOCK = ord("c")  # a block from cudaMalloc: the payload is its cudaIpcMemHandle_t
_EXPANDABLE_SEGMENT = ord("e")  # PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True


def cuda_ipc_mem_handle(exported: bytes) -> bytes:
    """The 64-byte cudaIpcMemHandle_t inside PyTorch's export of a caching-allocator block."""
    if len(exported) == _CUDA_IPC_HANDLE_BYTES:
        return exported
    if len(exported) == _CUDA_IPC_HANDLE_BYTES + 2 and exported[1] == _CUDA_MALLOC_BLOCK:
        return exported[2:]
    if len(exported) >= 2 and exported[1] == _EXPANDABLE_SEGMENT:
        raise InvalidArgument(
            "input: the tensor lives in an expandable segment (PYTORCH_CUDA_ALLOC_CONF="
            "expandable_segments:True), which has no CUDA IPC handle; use transport='bytes' or "
            "'shm', or allocate without expandable segments")
    raise InvalidArgument(
        f"input: PyTorch exported a {len(exported)}-byte handle of a form normd does not know "
        f"(type byte {exported[1:2]!r}); expected {_CUDA_IPC_HANDLE_BYTES} bytes, or "
        f"{_CUDA_IPC_HANDLE_BYTES + 2} of type 'c'")


def is_cuda_tensor(x) -> bool:
    torch = torch_module()
    return torch is not None and isinstance(x, torch.Tensor) and x.is_cuda


class _Registered:
    """A tensor registered as a CUDA region: the region id and the tensor's offset in it."""

    def __init__(self, session: RegionSession, tensor):
        storage = tensor.untyped_storage()
        shared = storage._share_cuda_()
        _, handle, storage_bytes, storage_offset = shared[:4]
        # PyTorch counts consumers of an exported block and keeps it from reuse until each has
        # released its count; normd does not speak that protocol, so release() does it for it.
        self._counter = shared[4:6]
        self.tensor = tensor  # holds the memory while normd may use it
        try:
            self.id = session.register_cuda(cuda_ipc_mem_handle(bytes(handle)),
                                            device_uuid(tensor.device),
                                            storage_offset, storage_bytes)
        except BaseException:
            self.release_counter()
            raise
        self.offset = tensor.storage_offset() * tensor.element_size()
        self.nbytes = tensor.numel() * tensor.element_size()

    def release_counter(self) -> None:
        counter, self._counter = self._counter, None
        if counter and counter[0]:
            torch_module().UntypedStorage._release_ipc_counter_cuda(*counter)


def _tensor_field(field: int, code: int, shape, registered: _Registered) -> bytes:
    header = _wire.tensor_header(code, tuple(shape), 0)
    body = header + region_reference(4, registered.id, registered.offset, registered.nbytes)
    return _wire.length_delimited(field, len(body)) + body


class CudaAttached:
    """One call's tensors as CUDA regions (the normd._transport.Attached interface)."""

    def __init__(self, session: RegionSession, x, residual):
        torch = torch_module()
        self._session = session
        self._regions: List[_Registered] = []
        code = _dtype_code(x)
        x = x.detach().contiguous()
        self.input = _Shape(code, tuple(x.shape), x.numel() * x.element_size())
        try:
            inputs = [x] + ([residual.detach().contiguous()] if residual is not None else [])
            self._outputs = [torch.empty_like(x) for _ in inputs]  # y, and h with a residual
            torch.cuda.current_stream(x.device).synchronize()  # normd must see finished inputs
            registered = [self._register(t) for t in inputs + self._outputs]
        except BaseException:
            self.release()
            raise
        self.input_field = [_tensor_field(_wire.INPUT, code, x.shape, registered[0])]
        self.residual_field = []
        outs = registered[len(inputs):]
        if residual is not None:
            self.residual_field = [_tensor_field(_wire.RESIDUAL, _dtype_code(residual),
                                                 residual.shape, registered[1])]
        self.output_field = b"".join(
            region_reference(8 + i, r.id, r.offset, r.nbytes) for i, r in enumerate(outs))

    def _register(self, tensor) -> _Registered:
        registered = _Registered(self._session, tensor)
        self._regions.append(registered)
        return registered

    def outputs(self, response: bytes):
        # normd answered after its stream finished writing: the tensors hold the results.
        return self._outputs[0] if len(self._outputs) == 1 else tuple(self._outputs)

    def release(self) -> None:
        regions, self._regions = self._regions, []
        for registered in regions:
            self._session.unregister(registered.id)
            registered.release_counter()


class _Shape:
    """What a call's `input` must say for the client (dtype, shape, size); no host copy."""

    __slots__ = ("dtype", "shape", "nbytes")

    def __init__(self, dtype: int, shape, nbytes: int):
        self.dtype, self.shape, self.nbytes = dtype, shape, nbytes
