"""cuMem*: allocation, pinned memory, memset and every memcpy form, with their errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from libgdev.cuda import CU_MEMHOSTALLOC_PORTABLE, CU_MEMHOSTALLOC_WRITECOMBINED, CudaError
from libgdev.cuda import CUresult as R

from .conftest import VGPU_MEM, MiB


def _raises(result: R):  # type: ignore[no-untyped-def]
    return pytest.raises(CudaError, match=result.name)


def test_alloc_free_and_info(drv, ctx) -> None:
    free0, total = drv.cuMemGetInfo()
    assert total == VGPU_MEM and free0 == total
    d = drv.cuMemAlloc(MiB + 1)
    assert drv.cuMemGetAddressRange(d + MiB) == (d, MiB + 1)
    with _raises(R.CUDA_ERROR_NOT_FOUND):
        drv.cuMemGetAddressRange(d + MiB + 1)
    free1, _ = drv.cuMemGetInfo()
    assert free0 - free1 >= MiB + 1
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuMemFree(d + 4096)  # not the base of the allocation
    drv.cuMemFree(d)
    assert drv.cuMemGetInfo()[0] == free0
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuMemFree(d)  # double free
    for bad in (0, -5):
        with _raises(R.CUDA_ERROR_INVALID_VALUE):
            drv.cuMemAlloc(bad)
    with _raises(R.CUDA_ERROR_OUT_OF_MEMORY):
        drv.cuMemAlloc(17 * MiB)  # beyond the vGPU's share


def test_no_context_no_memory(drv) -> None:
    with _raises(R.CUDA_ERROR_INVALID_CONTEXT):
        drv.cuMemAlloc(4096)


def test_htod_dtoh_dtod_round_trip(drv, ctx) -> None:
    rng = np.random.default_rng(1)
    for n in (1, 4096, 4097, 300_000):  # direct and bounce-buffer paths
        src = rng.integers(0, 256, n, dtype=np.uint8)
        a, b = drv.cuMemAlloc(n), drv.cuMemAlloc(n)
        drv.cuMemcpyHtoD(a, src)
        drv.cuMemcpyDtoD(b, a, n)
        out = np.zeros(n, np.uint8)
        drv.cuMemcpyDtoH(out, b)
        assert np.array_equal(out, src)
        part = np.zeros(n // 2 + 1, np.uint8)
        drv.cuMemcpyDtoH(part, a + n // 2, n - n // 2)
        assert np.array_equal(part[:n - n // 2], src[n // 2:])
        drv.cuMemFree(a)
        drv.cuMemFree(b)


def test_copy_errors(drv, ctx) -> None:
    d = drv.cuMemAlloc(4096)
    drv.cuMemcpyHtoD(d, b"")  # copying nothing succeeds, as in CUDA
    drv.cuMemcpyDtoH(bytearray(), d)
    drv.cuMemcpyDtoD(d, d, 0)
    drv.cuMemcpyDtoDAsync(d, d, 0, None)
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuMemcpyHtoD(d, np.zeros(8, np.uint8), 9)  # longer than the host buffer
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuMemcpyDtoH(b"read-only", d)
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuMemcpyHtoD(d, np.zeros((4, 4), np.uint8)[:, 1])  # not contiguous
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuMemcpyHtoD(0x7000_0000_00, b"x")  # no such object
    with _raises(R.CUDA_ERROR_INVALID_VALUE):  # a bad range, not a sticky kernel fault
        drv.cuMemcpyHtoD(d + 4000, np.zeros(200, np.uint8))  # runs past the allocation
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuMemsetD8(d + 4000, 0, 200)
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuMemcpyDtoD(d, d + 2048, 4096)
    other = drv.cuCtxCreate(0, 1)
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuMemcpyHtoD(d, b"x")  # d belongs to the other context's address space
    drv.cuCtxDestroy(other)
    drv.cuMemFree(d)


@pytest.mark.parametrize(("fn", "dtype"), [("cuMemsetD8", np.uint8), ("cuMemsetD16", np.uint16),
                                           ("cuMemsetD32", np.uint32)])
def test_memset(drv, ctx, fn: str, dtype) -> None:
    item = np.dtype(dtype).itemsize
    n = 5000
    d = drv.cuMemAlloc(n * item + 64)
    drv.cuMemsetD8(d, 0xEE, n * item + 64)
    value = {1: 0xA5, 2: 0xBEEF, 4: 0xDEADBEEF}[item]
    getattr(drv, fn)(d + item, value, n - 1)
    out = np.zeros(n * item + 64, np.uint8)
    drv.cuMemcpyDtoH(out, d)
    words = out[:n * item].view(dtype)
    assert np.all(words[1:n] == value)
    assert np.all(out[:item] == 0xEE) and np.all(out[n * item:] == 0xEE)
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        getattr(drv, fn)(d, 1 << (8 * item), 1)
    if item > 1:
        with _raises(R.CUDA_ERROR_INVALID_VALUE):
            getattr(drv, fn)(d + 1, 0, 1)  # misaligned
    drv.cuMemFree(d)


def test_memset_larger_than_one_pattern_chunk(drv, ctx, monkeypatch) -> None:
    import libgdev.cuda.memory as memory

    monkeypatch.setattr(memory, "MEMSET_CHUNK", 4096)
    d = drv.cuMemAlloc(3 * 4096 + 12)
    drv.cuMemsetD32(d, 0x01020304, (3 * 4096 + 12) // 4)
    out = np.zeros((3 * 4096 + 12) // 4, np.uint32)
    drv.cuMemcpyDtoH(out, d)
    assert np.all(out == 0x01020304)
    drv.cuMemFree(d)


def test_pinned_memory(drv, ctx) -> None:
    assert drv.cuMemAllocHost(1000).nbytes == 1000  # freed with the context
    h = drv.cuMemAllocHost(256 * 1024)
    assert isinstance(h, np.ndarray) and h.dtype == np.uint8 and h.nbytes == 256 * 1024
    h[:] = np.arange(h.size, dtype=np.uint64).astype(np.uint8)
    va = drv.cuMemHostGetDevicePointer(h)
    assert va == drv.cuMemHostGetDevicePointer(h[:10])
    assert drv.cuMemHostGetDevicePointer(h[4096:]) == va + 4096
    d = drv.cuMemAlloc(h.nbytes)
    drv.cuMemcpyHtoD(d, h)
    drv.cuMemcpyDtoD(d + 4, va, 100)  # the pinned buffer is in the unified address space
    back = drv.cuMemHostAlloc(h.nbytes, CU_MEMHOSTALLOC_WRITECOMBINED)
    drv.cuMemcpyDtoH(back, d)
    assert np.array_equal(back[:4], h[:4]) and np.array_equal(back[4:104], h[:100])
    assert np.array_equal(back[104:], h[104:])
    drv.cuMemcpy(va + 200, d, 4)  # and a unified copy may write into it
    drv.cuMemcpyAsync(va + 204, d, 4, None)
    drv.cuCtxSynchronize()
    assert np.array_equal(h[200:204], h[:4]) and np.array_equal(h[204:208], h[:4])
    portable = drv.cuMemHostAlloc(4096, CU_MEMHOSTALLOC_PORTABLE)   # usable from any context
    portable[:4] = h[:4]
    other = drv.cuCtxCreate(0, 1)
    d2 = drv.cuMemAlloc(16)
    drv.cuMemcpyHtoD(d2, portable[:16])
    drv.cuMemcpyDtoH(portable[4:8], d2)
    assert np.array_equal(portable[4:8], portable[:4])
    drv.cuMemFreeHost(portable)                 # freed from the other context
    drv.cuCtxDestroy(other)
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuMemHostAlloc(4096, 0x80)
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuMemFreeHost(np.zeros(4, np.uint8))
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuMemHostGetDevicePointer(np.zeros(4, np.uint8))
    drv.cuMemFreeHost(h)
    drv.cuMemFreeHost(back)
    with _raises(R.CUDA_ERROR_INVALID_VALUE):
        drv.cuMemFreeHost(h)
    drv.cuMemFree(d)


def test_async_copies_in_streams(drv, ctx) -> None:
    n = 1 << 20
    h = drv.cuMemAllocHost(n)
    h[:] = np.random.default_rng(2).integers(0, 256, n, dtype=np.uint8)
    out = drv.cuMemAllocHost(n)
    a, b = drv.cuMemAlloc(n), drv.cuMemAlloc(n)
    s = drv.cuStreamCreate(0)
    drv.cuMemcpyHtoDAsync(a, h, None, s)
    drv.cuMemcpyDtoDAsync(b, a, n, s)
    drv.cuMemcpyDtoHAsync(out, b, None, s)
    drv.cuStreamSynchronize(s)
    drv.cuStreamQuery(s)
    assert np.array_equal(out, h)
    pageable = np.zeros(1000, np.uint8)
    drv.cuMemcpyDtoHAsync(pageable, a, None, None)  # pageable: done on return
    assert np.array_equal(pageable, h[:1000])
    drv.cuStreamDestroy(s)
    for p in (h, out):
        drv.cuMemFreeHost(p)
    drv.cuMemFree(a)
    drv.cuMemFree(b)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_copies_match_a_bytearray_model(kernel_thread, data) -> None:
    """Random HtoD/DtoD/memset/DtoH sequences on one allocation equal a bytearray model."""
    from gdevd.facade import RuntimeFacade
    from libgdev.cuda import bind

    drv = bind(RuntimeFacade(kernel_thread.system, kernel_thread.token))
    drv.cuInit(0)
    drv.cuCtxCreate(0, 0)
    try:
        out, model = _random_copies(drv, data)
    finally:
        drv.shutdown()
        kernel_thread.fsck()
    assert out == model


def _random_copies(drv, data) -> tuple[bytearray, bytearray]:
    size = data.draw(st.integers(1, 20_000))
    d = drv.cuMemAlloc(size)
    model = bytearray(size)
    drv.cuMemsetD8(d, 0, size)
    for _ in range(data.draw(st.integers(1, 6))):
        off = data.draw(st.integers(0, size - 1))
        n = data.draw(st.integers(1, size - off))
        op = data.draw(st.sampled_from(["htod", "dtod", "memset"]))
        if op == "htod":
            blob = data.draw(st.binary(min_size=n, max_size=n))
            drv.cuMemcpyHtoD(d + off, blob)
            model[off:off + n] = blob
        elif op == "memset":
            v = data.draw(st.integers(0, 255))
            drv.cuMemsetD8(d + off, v, n)
            model[off:off + n] = bytes([v]) * n
        else:  # overlapping DtoD ranges are undefined in CUDA: draw disjoint ones
            src = data.draw(st.integers(0, size - n))
            if src < off + n and off < src + n:
                continue
            drv.cuMemcpyDtoD(d + off, d + src, n)
            model[off:off + n] = model[src:src + n]
    out = bytearray(size)
    drv.cuMemcpyDtoH(out, d)
    return out, model
