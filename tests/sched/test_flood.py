"""Floods of raw ABI messages on the real ioctl path (issue 6, item 5).

A real runtime and session table serve the ioctl socket in a trio loop (as in
tests/daemon/test_dispatch_inprocess.py); every client is a raw socket in a worker thread
that speaks ``libgdev.abi`` directly, bypassing libgdev.  A flooder pipelines requests
without reading the replies; a victim does a fixed amount of work.  The assertions are on
the scheduler's accounting (its busy-interval trace), never on wall-clock timings.
"""

from __future__ import annotations

import os
import socket
import struct
import tempfile
from collections.abc import Callable
from typing import Any

import trio

from gdevd import runtime as rt
from gdevd.ioctl.server import IoctlServer
from gdevd.ioctl.session import Opener, SessionTable
from gdevd.runtime import defaults as D
from gdevd.runtime.sched import COMPUTE, MEMORY
from libgdev import abi

from .kernels import LOOP_PTX

SPIN = 3000          # iterations of kernels/loop.cu's ``idle``: ~15 ms of engine time, long
                     # against a client's round trip even on a loaded machine
FLOOD = 20000        # requests a flooder tries to pipeline (far more than the daemon takes)


class Raw:
    """One session driven with raw ABI frames."""

    def __init__(self, path: str, token: bytes) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(path)
        self.rx = abi.ReceiveBuffer()
        self.rid = 0
        assert self.call("HELLO", token=token)[0] == 0

    def frame(self, name: str, tail: bytes = b"", **fields: Any) -> bytes:
        self.rid += 1
        return abi.encode_request(name, self.rid, tail, **fields)

    def reply(self) -> tuple[int, Any]:
        while (frame := self.rx.next_frame()) is None:
            data = self.sock.recv(1 << 20)
            assert data, "the daemon closed the session"
            self.rx.feed(data)
        _, status, fields, _ = abi.decode_reply(frame)
        return status, fields

    def call(self, name: str, tail: bytes = b"", **fields: Any) -> tuple[int, Any]:
        self.sock.sendall(self.frame(name, tail, **fields))
        return self.reply()

    def flood(self, frames: Callable[[], bytes], limit: int) -> int:
        """Pipeline up to ``limit`` frames without reading a reply; stop at backpressure
        (a send that does not complete in 2 s).  The number of whole frames sent."""
        self.sock.settimeout(2.0)
        sent = 0
        try:
            while sent < limit:
                self.sock.sendall(frames())
                sent += 1
        except TimeoutError:
            pass
        return sent

    def upload_loop(self) -> tuple[int, int]:
        """kernels/loop.ptx in device memory and an output word: (code, out)."""
        code = self.call("GMALLOC", size=len(LOOP_PTX))[1].addr
        assert self.call("GMEMCPY_TO_DEVICE", LOOP_PTX, dev_addr=code, size=len(LOOP_PTX),
                         host_offset=0, buf_id=0, host_kind=abi.HOST_INLINE)[0] == 0
        return code, self.call("GMALLOC", size=4096)[1].addr

    def launch_frame(self, code: int, out: int, n: int = SPIN) -> bytes:
        params = struct.pack("<QI", out, n)
        return self.frame("GLAUNCH", b"idle" + params, code_addr=code, code_size=len(LOOP_PTX),
                          data_addr=0, grid_x=1, grid_y=1, grid_z=1, block_x=1, block_y=1,
                          block_z=1, shared_dynamic=0, name_len=4, params_len=len(params))


def serve(minors: list[int], body: Callable[..., Any]) -> Any:
    """Open a session on each of ``minors``; run ``body(system, path, sessions)`` in a
    worker thread against the live server; end every session; check the invariants."""
    async def main(path: str) -> Any:
        async with rt.GdevSystem(rt.GdevConfig(memory=64 << 20)) as system:
            system.scheduler.trace = []
            table = SessionTable(system, path)
            async with trio.open_nursery() as nursery:
                await nursery.start(IoctlServer(table, path).serve)
                me = Opener(os.getuid(), os.getgid(), os.getpid(), os.getpid())
                sessions = [await table.open(m, me) for m in minors]
                result = await trio.to_thread.run_sync(body, system, path, sessions)
                await table.end_all()
                nursery.cancel_scope.cancel()
            system.check_invariants()
        assert all(v.memory_used == 0 for v in system.virtual)
        return result
    with tempfile.TemporaryDirectory(prefix="gdevd-flood-") as tmp:
        return trio.run(main, os.path.join(tmp, "s"))


def busy_share(trace: list, kind: str, cids: set[int], others: set[int]) -> float:
    """``cids``' fraction of the ``kind`` busy time of ``cids | others``, counted over the
    span from the first to the last interval of ``cids`` (while both were busy)."""
    mine = [(s, e) for _, k, c, s, e in trace if k == kind and c in cids]
    lo, hi = min(s for s, _ in mine), max(e for _, e in mine)
    t = {c: 0.0 for c in cids | others}
    for _, k, c, s, e in trace:
        if k == kind and c in t:
            t[c] += max(0.0, min(e, hi) - max(s, lo))
    return sum(t[c] for c in cids) / sum(t.values())


def _flood_launches(raw: Raw) -> int:
    code, out = raw.upload_loop()
    return raw.flood(lambda: raw.launch_frame(code, out), FLOOD)


def test_launch_flood_of_raw_messages_cannot_starve_another_vgpu() -> None:
    def body(system: rt.GdevSystem, path: str, sessions: list) -> None:
        flooder, victim = Raw(path, sessions[0].token), Raw(path, sessions[1].token)
        code, out = victim.upload_loop()
        with_flood: list[int] = []
        th = _thread(lambda: with_flood.append(_flood_launches(flooder)))
        fh = sessions[0].handle
        _wait_until(lambda: len(fh.pending) >= 4)          # the flood is under way
        most = 0
        for _ in range(15):                                 # the victim's fixed work
            most = max(most, len(fh.pending))
            victim.sock.sendall(victim.launch_frame(code, out))
            status, f = victim.reply()
            assert status == 0
            assert victim.call("GSYNC", id=f.id, flags=0, timeout_us=0)[0] == 0
        th.join()
        sent = with_flood[0]
        assert sent < FLOOD                        # backpressure: the daemon stopped reading
        assert most <= sent < D.FENCE_COUNT        # launches in flight: bounded
        trace = system.scheduler.trace
        share = busy_share(trace, COMPUTE, {sessions[1].handle.cid}, {fh.cid})
        assert share >= 0.35, share
        flooder.sock.close()                       # ends the session, cancels its launches
        victim.sock.close()
    serve([0, 1], body)


def _flood_copies(raw: Raw, dst: int, size: int) -> int:
    data = bytes(size)
    return raw.flood(lambda: raw.frame("GMEMCPY_TO_DEVICE", data, dev_addr=dst, size=size,
                                       host_offset=0, buf_id=0, host_kind=abi.HOST_INLINE),
                     FLOOD)


def test_direct_copy_flood_is_charged_and_cannot_starve_another_vgpu() -> None:
    """Direct copies (inline, under the 1 MiB boundary) from vd0 against engine copies
    (4 MiB from a pinned buffer) of vd1: the flood is charged as memory-engine time."""
    def body(system: rt.GdevSystem, path: str, sessions: list) -> None:
        flooder, victim = Raw(path, sessions[0].token), Raw(path, sessions[1].token)
        fh, vh = sessions[0].handle, sessions[1].handle
        dst = flooder.call("GMALLOC", size=1 << 20)[1].addr
        size = 4 << 20
        vdst = victim.call("GMALLOC", size=size)[1].addr
        status, f = victim.call("GMALLOC_DMA", size=size)
        assert status == 0
        result: list[int] = []
        th = _thread(lambda: result.append(_flood_copies(flooder, dst, 256 << 10)))
        _wait_until(lambda: fh.counters.copies["direct"] >= 16)
        for _ in range(15):                                  # the victim's fixed work
            assert victim.call("GMEMCPY_TO_DEVICE", dev_addr=vdst, size=size, host_offset=0,
                               buf_id=f.buf_id, host_kind=abi.HOST_DMA)[0] == 0
        th.join()
        assert result[0] < FLOOD                              # backpressure
        se = system.scheduler.entity(fh)
        assert se.usage.copies == fh.counters.copies["direct"]     # every direct copy counted
        assert se.usage.copy_s > 0 and vh.counters.copies["pinned"] == 15
        share = busy_share(system.scheduler.trace, MEMORY, {vh.cid}, {fh.cid})
        assert share >= 0.35, share
        flooder.sock.close()
        victim.sock.close()
    serve([0, 1], body)


def test_a_higher_priority_context_is_served_first_while_others_of_its_vgpu_flood() -> None:
    """Three priority-1 contexts flood launches on vd0; a priority-20 context of vd0 gets
    the engine each time the running launch ends (about half, where FIFO would give a
    quarter)."""
    def body(system: rt.GdevSystem, path: str, sessions: list) -> None:
        raws = [Raw(path, s.token) for s in sessions]
        victim, flooders = raws[0], raws[1:]
        for r in flooders:
            status, f = r.call("SET_PRIORITY", prio=1, flags=0)
            assert status == 0 and f.prio == 1
        code, out = victim.upload_loop()
        threads = [_thread(lambda r=r: _flood_launches(r)) for r in flooders]
        handles = [s.handle for s in sessions]
        _wait_until(lambda: all(len(h.pending) >= 2 for h in handles[1:]))
        for _ in range(12):
            victim.sock.sendall(victim.launch_frame(code, out))
            status, f = victim.reply()
            assert status == 0
            assert victim.call("GSYNC", id=f.id, flags=0, timeout_us=0)[0] == 0
        for th in threads:
            th.join()
        cids = {h.cid for h in handles[1:]}
        share = busy_share(system.scheduler.trace, COMPUTE, {handles[0].cid}, cids)
        assert share >= 0.35, share
        for r in raws:
            r.sock.close()
    serve([0, 0, 0, 0], body)


def _thread(fn: Callable[[], Any]) -> Any:
    import threading
    th = threading.Thread(target=fn, daemon=True)
    th.start()
    return th


def _wait_until(pred: Callable[[], bool], limit: int = 6000) -> None:
    import time
    for _ in range(limit):                   # bounded: at most 60 s
        if pred():
            return
        time.sleep(0.01)
    raise AssertionError("condition not reached")
