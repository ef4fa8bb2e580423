"""The dispatch table's handlers of the GIPC_* commands (CUDA IPC memory and event handles),
registered with :func:`gdevd.ioctl.dispatch.handler` like every other; the runtime checks
every value (``gdevd/runtime/api_ipc.py``), so each handler only unpacks and forwards."""

from __future__ import annotations

from gdevd.ioctl import backend
from gdevd.ioctl.dispatch import Call, Out, _timeout, handler
from libgdev import abi

_EMPTY = abi.Empty()


@handler(abi.GIPC_EXPORT)
async def _export(call: Call, req: abi.Addr, tail: abi.Tail) -> Out[abi.IpcToken]:
    return Out(abi.IpcToken(await backend.rt.gipc_export(call.s.handle, req.addr)))


@handler(abi.GIPC_OPEN)
async def _open(call: Call, req: abi.IpcToken, tail: abi.Tail) -> Out[abi.IpcMapping]:
    addr, size = await backend.rt.gipc_open(call.s.handle, req.handle)
    return Out(abi.IpcMapping(addr, size))


@handler(abi.GIPC_CLOSE)
async def _close(call: Call, req: abi.Addr, tail: abi.Tail) -> Out[abi.Empty]:
    await backend.rt.gipc_close(call.s.handle, req.addr)
    return Out(_EMPTY)


@handler(abi.GIPC_EVENT_NEW)
async def _event_new(call: Call, req: abi.Empty, tail: abi.Tail) -> Out[abi.IpcToken]:
    return Out(abi.IpcToken(await backend.rt.gipc_event_new(call.s.handle)))


@handler(abi.GIPC_EVENT_OPEN)
async def _event_open(call: Call, req: abi.IpcToken, tail: abi.Tail) -> Out[abi.IpcEvent]:
    return Out(abi.IpcEvent(await backend.rt.gipc_event_open(call.s.handle, req.handle)))


@handler(abi.GIPC_EVENT_RECORD)
async def _event_record(call: Call, req: abi.IpcEventStream,
                        tail: abi.Tail) -> Out[abi.Empty]:
    await backend.rt.gipc_event_record(call.s.handle, req.event, req.stream)
    return Out(_EMPTY)


@handler(abi.GIPC_EVENT_SYNC)
async def _event_sync(call: Call, req: abi.IpcEventSync, tail: abi.Tail) -> Out[abi.Empty]:
    timeout = _timeout("event sync", req.flags, abi.IPC_SYNC_TIMEOUT, req.timeout_us)
    await backend.rt.gipc_event_sync(call.s.handle, req.event, timeout)
    return Out(_EMPTY)


@handler(abi.GIPC_EVENT_WAIT)
async def _event_wait(call: Call, req: abi.IpcEventStream, tail: abi.Tail) -> Out[abi.Empty]:
    await backend.rt.gipc_event_wait(call.s.handle, req.stream, req.event)
    return Out(_EMPTY)


@handler(abi.GIPC_EVENT_CLOSE)
async def _event_close(call: Call, req: abi.IpcEvent, tail: abi.Tail) -> Out[abi.Empty]:
    await backend.rt.gipc_event_close(call.s.handle, req.event)
    return Out(_EMPTY)
