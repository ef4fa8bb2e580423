"""The interpreter's device-runtime calls (devrt.py), executed for all the calling lanes at
once.  A handler takes the running grid's state, the wave, the calling lanes (in lane order)
and each argument variable's rows for them, and returns the call's value per lane; a nonzero
``cudaError_t`` also becomes that thread's last error.  Pointers handed to a call are written
through the lanes' generic address space: a bad one faults the launch like a store.

Bounded work per call (a grid of 2**17 threads calling at once must not hold the engine
beyond a slice): everything is vectorized but taking and launching parameter buffers, which
loop only over the lanes that can get a slot (at most the arena's slots).  Without a device
runtime (a launch made without a tree) every call fails with ``cudaErrorNotSupported``.
Compiled kernels run the same code (:func:`call`) through a call into the host
(jit/devrtops.py, jit/hostcall.py)."""

from __future__ import annotations

import numpy as np

from . import devrt as D
from .devrt import Arena, Child, Copy, GridState
from .memory import SHARED_WINDOW
from .syntax import Group

_MAX_BLOCK = (1024, 1024, 64)
_MAX_GRID = ((1 << 31) - 1, 65535, 65535)


def _col(rows: np.ndarray, dtype: str) -> np.ndarray:
    """The first value of type ``dtype`` of each row of argument bytes."""
    w = np.dtype(dtype).itemsize
    return np.ascontiguousarray(rows[:, :w]).view(dtype)[:, 0]


def _dim3(row: np.ndarray) -> tuple[int, int, int]:
    x, y, z = (int(v) for v in np.ascontiguousarray(row[:12]).view("<u4"))
    return x, y, z


def _put(env, lanes: np.ndarray, ptrs: np.ndarray, values, dtype: str) -> None:
    """Store ``values`` (one per lane) at the lanes' generic addresses ``ptrs``."""
    if lanes.size:
        vals = np.broadcast_to(np.asarray(values, dtype=dtype), lanes.shape)
        env.mem.store("generic", ptrs.astype(np.uint64), lanes, vals.reshape(-1, 1).copy())


def _errors(env) -> np.ndarray:
    if env.devrt_errors is None:
        env.devrt_errors = np.zeros(env.n, np.int32)
    return env.devrt_errors


# -- launches ---------------------------------------------------------------------------
def get_buffer_v2(st: GridState, env, lanes, a) -> np.ndarray:
    """``cudaGetParameterBufferV2(func, grid, block, smem)``: a slot remembering the launch
    (lanes in order while slots last); NULL and the thread's error otherwise."""
    out = np.zeros(lanes.size, np.uint64)
    arena, kernels = st.tree.arena, st.tree.kernels
    funcs = _col(a[0], "<u8")
    valid = np.isin(funcs, np.fromiter(kernels, np.uint64))
    if arena is not None:
        take = np.flatnonzero(valid)[:len(arena.free)]
        dims = np.ascontiguousarray(np.hstack([a[1][take, :12], a[2][take, :12]]))
        shared = _col(a[3][take], "<u4").tolist()
        for k, f, d, sh in zip(take.tolist(), funcs[take].tolist(),
                               dims.view("<u4").reshape(-1, 6).tolist(), shared, strict=True):
            out[k] = arena.take((kernels[f], tuple(d[:3]), tuple(d[3:]), sh))
    _fail_null(env, lanes, out, valid)
    return out


def get_buffer(st: GridState, env, lanes, a) -> np.ndarray:
    """``cudaGetParameterBuffer(alignment, size)`` (for ``cudaLaunchDevice``)."""
    out = np.zeros(lanes.size, np.uint64)
    arena = st.tree.arena
    fits = (_col(a[1], "<u8") <= (arena.size if arena else 0)) & (_col(a[0], "<u8") <= 256)
    for k in np.flatnonzero(fits).tolist():
        if arena is None or not arena.free:
            break
        out[k] = arena.take(None)
    _fail_null(env, lanes, out, fits)
    return out


def _fail_null(env, lanes, out: np.ndarray, valid) -> None:
    """The last error of lanes that got no buffer: no slot left, or a bad argument."""
    null = out == 0
    _errors(env)[lanes[null]] = np.where(np.asarray(valid, bool)[null], D.PENDING_EXCEEDED,
                                         D.INVALID_VALUE)


def _slots(arena: Arena | None, bufs: np.ndarray) -> np.ndarray:
    """Per lane, the arena slot its buffer address names, or -1."""
    if arena is None:
        return np.full(bufs.size, -1, np.int64)
    off = bufs.astype(np.int64) - arena.va
    ok = (bufs >= arena.va) & (off % arena.size == 0) & (off // arena.size < arena.count)
    return np.where(ok, off // arena.size, -1)


def launch_v2(st: GridState, env, lanes, a) -> np.ndarray:
    """``cudaLaunchDeviceV2(buffer, stream)``."""
    out = np.full(lanes.size, D.INVALID_VALUE, np.int64)
    arena, streams, blocks = st.tree.arena, _col(a[1], "<u8"), env.block_of(lanes)
    for k, slot in enumerate(_slots(arena, _col(a[0], "<u8")).tolist()):
        config = arena.taken.get(slot) if arena is not None else None
        if arena is not None and config:
            out[k] = _record(st, arena, slot, config, int(streams[k]), int(blocks[k]))
    return out


def launch_v1(st: GridState, env, lanes, a) -> np.ndarray:
    """``cudaLaunchDevice(func, buffer, grid, block, smem, stream)``."""
    out = np.full(lanes.size, D.INVALID_VALUE, np.int64)
    arena, kernels = st.tree.arena, st.tree.kernels
    funcs, streams, blocks = _col(a[0], "<u8"), _col(a[5], "<u8"), env.block_of(lanes)
    for k, slot in enumerate(_slots(arena, _col(a[1], "<u8")).tolist()):
        kernel = kernels.get(int(funcs[k]))
        if slot < 0 or arena is None or slot not in arena.taken or arena.taken[slot]:
            continue
        if kernel is None:
            out[k] = D.INVALID_FUNCTION
            continue
        config = (kernel, _dim3(a[2][k]), _dim3(a[3][k]), _u32(a[4][k]))
        out[k] = _record(st, arena, slot, config, int(streams[k]), int(blocks[k]))
    return out


def _record(st: GridState, arena: Arena, slot: int, config: tuple, stream: int,
            issuer: int) -> int:
    """Check a launch (kernel, grid, block, shared bytes) by block ``issuer`` and record it
    on ``st``; the slot is given back if it is refused."""
    kernel, grid, block, shared = config
    err = _check(st, kernel, grid, block, shared)
    if err:
        arena.give(slot)
        return err
    arena.taken[slot] = None            # pending: no second LaunchDevice of this buffer
    arena.pending += 1
    child = Child(kernel, grid, block, shared, slot, stream == D.STREAM_TAIL, issuer)
    (st.tails if child.tail else st.children).append(child)
    return D.SUCCESS


def _check(st: GridState, kernel: str, grid, block, shared: int) -> int:
    info = st.tree.module.kernels[kernel]
    tpb = block[0] * block[1] * block[2]
    if not all(0 < d <= m for d, m in zip(grid + block, _MAX_GRID + _MAX_BLOCK, strict=True)):
        return D.CONFIGURATION
    if tpb > (info.max_threads or 1024) or info.static_shared + shared > 48 * 1024:
        return D.CONFIGURATION
    if st.depth + 1 > D.MAX_DEPTH:
        return D.MAX_DEPTH_EXCEEDED
    return D.SUCCESS


# -- streams, events, queries --------------------------------------------------------------
def create_handle(flag: int):
    """``cudaStreamCreateWithFlags``/``cudaEventCreateWithFlags(&h, flags)``: ``flag``
    required (non-blocking streams, events without timing, as the device runtime demands)."""
    def call(st: GridState, env, lanes, a) -> np.ndarray:
        ok = (_col(a[1], "<u4") & flag) != 0
        names = st.tree.new_names(int(ok.sum()))
        _put(env, lanes[ok], _col(a[0], "<u8")[ok], names, "u8")
        return np.where(ok, D.SUCCESS, D.INVALID_VALUE)
    return call


def succeed(st, env, lanes, a) -> np.ndarray:
    """Destroying, recording and waiting: nothing to do (issue order orders every launch)."""
    return np.zeros(lanes.size, np.int64)


def last_error(clear: bool):
    """``cudaGetLastError`` (clears it) and ``cudaPeekAtLastError``."""
    def call(st, env, lanes, a) -> np.ndarray:
        errs = _errors(env)
        out = errs[lanes].astype(np.int64)
        if clear:
            errs[lanes] = 0
        return out
    return call


def put_value(value, dtype: str = "i4"):
    """A query writing ``value(st, args of one lane)`` (None: ``cudaErrorInvalidValue``) to
    each lane's ``*a[0]``."""
    def call(st, env, lanes, a) -> np.ndarray:
        vals = [value(st, [x[k] for x in a]) for k in range(lanes.size)]
        ok = np.array([v is not None for v in vals], bool)
        _put(env, lanes[ok], _col(a[0], "<u8")[ok],
             np.array([v for v in vals if v is not None], dtype=dtype), dtype)
        return np.where(ok, D.SUCCESS, D.INVALID_VALUE)
    return call


def _u32(row: np.ndarray) -> int:
    return int(np.ascontiguousarray(row[:4]).view("<u4")[0])


def _attribute(st, a):
    return st.tree.attributes.get(_u32(a[1]), 0) if _u32(a[2]) == 0 else None


def _limit(st, a):
    if _u32(a[1]) == 4:
        return st.tree.arena.count if st.tree.arena else 0
    return D.LIMITS.get(_u32(a[1]))


# -- copies ---------------------------------------------------------------------------------
D2D, DEFAULT = 3, 4     # the cudaMemcpyKinds a device may ask for


def _global(ptrs: np.ndarray) -> np.ndarray:
    """Which generic addresses are global memory (not the shared or local windows)."""
    return ptrs < np.uint64(SHARED_WINDOW)


def _queue(st: GridState, copy: Copy) -> None:
    (st.tails if copy.tail else st.children).append(copy)


def memcpy_async(st: GridState, env, lanes, a) -> np.ndarray:
    """``cudaMemcpyAsync(dst, src, count, kind, stream)``: recorded (see devrt.py)."""
    dst, src, count = _col(a[0], "<u8"), _col(a[1], "<u8"), _col(a[2], "<u8")
    kinds, streams = _col(a[3], "<u4"), _col(a[4], "<u8")
    ok = np.isin(kinds, (D2D, DEFAULT)) & _global(dst) & _global(src)
    blocks = env.block_of(lanes)
    for k in np.flatnonzero(ok & (count > 0)).tolist():
        _queue(st, Copy(int(dst[k]), int(count[k]), src=int(src[k]),
                        tail=int(streams[k]) == D.STREAM_TAIL, issuer=int(blocks[k])))
    return np.where(ok, D.SUCCESS, D.INVALID_VALUE)


def memset_async(st: GridState, env, lanes, a) -> np.ndarray:
    """``cudaMemsetAsync(dst, value, count, stream)``: recorded (see devrt.py)."""
    dst, values = _col(a[0], "<u8"), _col(a[1], "<u4")
    count, streams = _col(a[2], "<u8"), _col(a[3], "<u8")
    ok, blocks = _global(dst), env.block_of(lanes)
    for k in np.flatnonzero(ok & (count > 0)).tolist():
        _queue(st, Copy(int(dst[k]), int(count[k]), value=int(values[k]) & 0xFF,
                        tail=int(streams[k]) == D.STREAM_TAIL, issuer=int(blocks[k])))
    return np.where(ok, D.SUCCESS, D.INVALID_VALUE)


# -- the device heap --------------------------------------------------------------------------
def dev_malloc(st: GridState, env, lanes, a) -> np.ndarray:
    """``cudaMalloc(&p, size)``: the device heap's block (``env.heap``), in lane order."""
    sizes, heap = _col(a[1], "<u8").tolist(), env.heap
    ptrs = np.array([heap.malloc(n) if heap is not None and n else 0 for n in sizes],
                    np.uint64)
    _put(env, lanes, _col(a[0], "<u8"), ptrs, "u8")
    return np.where((ptrs != 0) | (np.array(sizes, np.uint64) == 0), D.SUCCESS,
                    D.MEMORY_ALLOCATION)


def dev_free(st: GridState, env, lanes, a) -> np.ndarray:
    """``cudaFree(p)``: back to the device heap; an address it did not give (or gave and
    took back) is ``cudaErrorInvalidValue``."""
    heap = env.heap
    return np.array([D.SUCCESS if va == 0 or (heap is not None and heap.free(va))
                     else D.INVALID_VALUE for va in _col(a[0], "<u8").tolist()], np.int64)


# canonical name -> (argument count, handler)
HANDLERS = {
    "GetParameterBufferV2": (4, get_buffer_v2), "GetParameterBuffer": (2, get_buffer),
    "LaunchDeviceV2": (2, launch_v2), "LaunchDevice": (6, launch_v1),
    "StreamCreateWithFlags": (2, create_handle(D.NONBLOCKING)),
    "EventCreateWithFlags": (2, create_handle(D.DISABLE_TIMING)),
    "StreamDestroy": (1, succeed), "EventDestroy": (1, succeed),
    "StreamWaitEvent": (3, succeed), "EventRecord": (2, succeed),
    "EventRecordWithFlags": (3, succeed),
    "GetLastError": (0, last_error(True)), "PeekAtLastError": (0, last_error(False)),
    "GetDevice": (1, put_value(lambda st, a: 0)),
    "GetDeviceCount": (1, put_value(lambda st, a: 1)),
    "RuntimeGetVersion": (1, put_value(lambda st, a: D.RUNTIME_VERSION)),
    "DeviceGetAttribute": (3, put_value(_attribute)),
    "DeviceGetLimit": (2, put_value(_limit, "u8")),
    "MemcpyAsync": (5, memcpy_async), "MemsetAsync": (4, memset_async),
    "Malloc": (2, dev_malloc), "Free": (1, dev_free),
}
_ERROR_QUERIES = {"GetLastError", "PeekAtLastError"}


def _unsupported(op: str, env, lanes) -> np.ndarray:
    """Every call of a launch without a device runtime (error queries excepted)."""
    if op.startswith("GetParameterBuffer"):
        _errors(env)[lanes] = D.NOT_SUPPORTED
        return np.zeros(lanes.size, np.int64)
    return np.full(lanes.size, D.NOT_SUPPORTED, np.int64)


def supported(name: str, nargs: int, nrets: int) -> bool:
    """Whether ``builtin.<name>`` with ``nargs`` arguments and ``nrets`` results is a call
    this module executes."""
    want, handler = HANDLERS.get(D.canonical(name), (None, None))
    return handler is not None and nargs == want and nrets <= 1


def call(name: str, env, lanes: np.ndarray, args: list[np.ndarray]) -> np.ndarray:
    """The values of device-runtime call ``name`` for ``lanes`` (in lane order), whose
    argument variables' rows for those lanes are ``args``; a nonzero ``cudaError_t`` becomes
    that thread's last error.  ``env``: the grid's view (``devrt``, ``mem``, ``heap``,
    ``n``, ``devrt_errors``, ``block_of``): the interpreter's wave, or the compiling
    engine's (jit/hostcall.py)."""
    op = D.canonical(name)
    handler = HANDLERS[op][1]
    st = env.devrt
    if st is None and op not in _ERROR_QUERIES:
        vals = _unsupported(op, env, lanes)
    else:
        vals = handler(st, env, lanes, args)
    vals = np.asarray(vals).astype(np.int64)
    if not op.startswith("GetParameterBuffer") and op not in _ERROR_QUERIES:
        bad = vals != 0
        _errors(env)[lanes[bad]] = vals[bad]
    return vals


def devrt_binder(ins, instr):
    """Binder of ``builtin.<device runtime call>`` (linker.py; see the module docstring)."""
    name = instr.opcode.split(".", 1)[1]
    rets = instr.args[0].items if isinstance(instr.args[0], Group) else ()
    params = instr.args[1].items if len(instr.args) > 1 and \
        isinstance(instr.args[1], Group) else ()
    if not supported(name, len(params), len(rets)):
        raise ins.fail(f"device runtime call {name} with {len(params)} arguments is not "
                       f"supported")

    def bind(env):
        args = [env.pvars[p.name] for p in params]
        out = env.pvars[rets[0].name] if rets else None

        def run(idx):
            lanes = env.lanes_all if idx is None else idx
            vals = call(name, env, lanes, [x[lanes] for x in args])
            if out is not None:
                w = out.shape[1]
                out[lanes, :w] = vals.view(np.uint8).reshape(-1, 8)[:, :w]
        return run
    return bind
