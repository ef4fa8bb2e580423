"""The dispatch table's handlers of the GVM_* commands (CUDA's virtual memory management),
registered with :func:`gdevd.ioctl.dispatch.handler` like every other; the runtime checks
every value (``gdevd/runtime/api_vmm.py``), so each handler only unpacks and forwards."""

from __future__ import annotations

from gdevd.ioctl import backend
from gdevd.ioctl.dispatch import Call, Out, handler
from libgdev import abi

_EMPTY = abi.Empty()


@handler(abi.GVM_RESERVE)
async def _reserve(call: Call, req: abi.VmReserve, tail: abi.Tail) -> Out[abi.Addr]:
    return Out(abi.Addr(await backend.rt.gvm_reserve(call.s.handle, req.size, req.align,
                                                     req.addr)))


@handler(abi.GVM_FREE)
async def _free(call: Call, req: abi.VmRange, tail: abi.Tail) -> Out[abi.Empty]:
    await backend.rt.gvm_free(call.s.handle, req.addr, req.size)
    return Out(_EMPTY)


@handler(abi.GVM_CREATE)
async def _create(call: Call, req: abi.Size, tail: abi.Tail) -> Out[abi.VmMem]:
    return Out(abi.VmMem(await backend.rt.gvm_create(call.s.handle, req.size)))


@handler(abi.GVM_RELEASE)
async def _release(call: Call, req: abi.VmMem, tail: abi.Tail) -> Out[abi.Empty]:
    await backend.rt.gvm_release(call.s.handle, req.mem)
    return Out(_EMPTY)


@handler(abi.GVM_MAP)
async def _map(call: Call, req: abi.VmMap, tail: abi.Tail) -> Out[abi.Empty]:
    await backend.rt.gvm_map(call.s.handle, req.addr, req.size, req.offset, req.mem)
    return Out(_EMPTY)


@handler(abi.GVM_UNMAP)
async def _unmap(call: Call, req: abi.VmRange, tail: abi.Tail) -> Out[abi.Empty]:
    await backend.rt.gvm_unmap(call.s.handle, req.addr, req.size)
    return Out(_EMPTY)


@handler(abi.GVM_SET_ACCESS)
async def _set_access(call: Call, req: abi.VmAccess, tail: abi.Tail) -> Out[abi.Empty]:
    await backend.rt.gvm_set_access(call.s.handle, req.addr, req.size, req.flags)
    return Out(_EMPTY)


@handler(abi.GVM_GET_ACCESS)
async def _get_access(call: Call, req: abi.Addr, tail: abi.Tail) -> Out[abi.VmFlags]:
    return Out(abi.VmFlags(await backend.rt.gvm_get_access(call.s.handle, req.addr)))


@handler(abi.GVM_RETAIN)
async def _retain(call: Call, req: abi.Addr, tail: abi.Tail) -> Out[abi.VmMem]:
    return Out(abi.VmMem(await backend.rt.gvm_retain(call.s.handle, req.addr)))


@handler(abi.GVM_SIZE)
async def _size(call: Call, req: abi.VmMem, tail: abi.Tail) -> Out[abi.Size]:
    return Out(abi.Size(await backend.rt.gvm_size(call.s.handle, req.mem)))


@handler(abi.GVM_EXPORT)
async def _export(call: Call, req: abi.VmMem, tail: abi.Tail) -> Out[abi.Empty]:
    return Out(_EMPTY, fd=await backend.rt.gvm_export(call.s.handle, req.mem))


@handler(abi.GVM_IMPORT)
async def _import(call: Call, req: abi.VmToken, tail: abi.Tail) -> Out[abi.VmMem]:
    return Out(abi.VmMem(backend.rt.vmm_import_token(call.s.handle, req.token)))
