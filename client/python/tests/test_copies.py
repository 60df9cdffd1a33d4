"""The bytes transport copies a tensor once on its way out (into the request bytes grpcio sends)
and once on its way back (out of the response bytes grpcio received), for the 32 MiB torch CPU
bfloat16 tensor of the target. tracemalloc sees every bytes object and numpy array Python
allocates; torch's own allocations it does not see, so the torch side is checked by data pointers:
the wire view is the input's own memory, and the result is a fresh tensor."""

import ctypes
import tracemalloc

import numpy as np
import pytest

from normd import _call, _transport, _wire

torch = pytest.importorskip("torch", reason="torch is not installed")
MIB = 1 << 20
PAYLOAD = 4096 * 4096 * 2  # 32 MiB of bfloat16


@pytest.fixture()
def tensor():
    return torch.randn(4096, 4096).bfloat16()


def traced_peak(action):
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = action()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_one_copy_out(tensor):
    attach = _transport.TransportChooser("bytes").attach
    call = _call.prepare(attach, None, tensor, np.ones(4096, np.float32), 1e-6, None, 0.0, "")
    assert call.attached.input.owner.data_ptr() == tensor.data_ptr()  # a view, not a copy
    request, peak = traced_peak(call.request)
    assert len(request) > PAYLOAD
    # The request itself is the only large allocation: one copy of the payload.
    assert peak < PAYLOAD + 1 * MIB, f"{peak / MIB:.1f} MiB allocated while marshalling"
    start = request.index(b"\x1a" + _wire.varint(PAYLOAD)) + 1 + len(_wire.varint(PAYLOAD))
    assert request[start:start + PAYLOAD] == ctypes.string_at(tensor.data_ptr(), PAYLOAD)


def test_one_copy_back(tensor):
    attached = _transport.BytesTransport().attach(tensor, None)
    response = b"".join(_wire.tensor_field(_wire.OUTPUT, _wire.BFLOAT16, (4096, 4096),
                                           attached.input.data, PAYLOAD))
    y, peak = traced_peak(lambda: attached.outputs(response))
    assert peak < 1 * MIB, f"{peak / MIB:.1f} MiB of Python objects allocated while unmarshalling"
    address = ctypes.cast(ctypes.c_char_p(response), ctypes.c_void_p).value
    assert not address <= y.data_ptr() < address + len(response)  # its own memory
    assert torch.equal(y.view(torch.int16), tensor.view(torch.int16))


def test_whole_call_adds_only_the_request_to_what_grpcio_allocates(client, tensor):
    w = torch.ones(4096, dtype=torch.bfloat16)
    client.rms_norm(tensor[:1], w)  # registers the weight and learns the limits
    call = client._prepare(tensor, w, 1e-6, None, 0.0, "")
    request = call.request()
    bare = client._channel.unary_unary("/normd.v1.Normalizer/Normalize")
    _, grpcio_peak = traced_peak(lambda: bare(request, timeout=60))  # grpcio's own buffers
    request = call = None  # only our own buffers from here on
    y, peak = traced_peak(lambda: client.rms_norm(tensor, w))
    assert y.shape == tensor.shape and y.dtype == torch.bfloat16
    # Beyond grpcio's buffers: our request bytes (32 MiB) and nothing else of that size (another
    # copy would add 32 MiB more). grpcio's own peak varies by a few MiB with how the response
    # arrived in pieces.
    assert peak < grpcio_peak + PAYLOAD + PAYLOAD // 2, (
        f"{peak / MIB:.1f} MiB allocated in a call; grpcio alone {grpcio_peak / MIB:.1f} MiB")
