"""The interpreter's device-runtime calls (devrt.py): one handler per call, run for each
executing lane in lane order.  A handler takes the running grid's state (None where the
launch has no device runtime: every call is then ``cudaErrorNotSupported``), the wave, the
lane and the rows of its argument variables, and returns the call's value; a nonzero
``cudaError_t`` also becomes the thread's last error.  Pointers handed to a call are written
through the lane's generic address space: a bad one faults the launch like a store.
Compiled kernels never get here: jit/cgen.py leaves kernels with calls to the interpreter."""

from __future__ import annotations

import struct

import numpy as np

from . import devrt as D
from .devrt import Arena, Child, GridState
from .syntax import Group

_MAX_BLOCK = (1024, 1024, 64)
_MAX_GRID = ((1 << 31) - 1, 65535, 65535)


def _u(row: np.ndarray, n: int = 8) -> int:
    return int.from_bytes(row[:n].tobytes(), "little")


def _dim3(row: np.ndarray) -> tuple[int, int, int]:
    return struct.unpack("<3I", row[:12].tobytes())


def _put(env, lane: int, ptr: int, value: int, dtype: str) -> None:
    env.mem.store("generic", np.array([ptr], np.uint64), np.array([lane], np.int64),
                  np.array([[value]], dtype=dtype))


def _errors(env) -> np.ndarray:
    if getattr(env, "devrt_errors", None) is None:
        env.devrt_errors = np.zeros(env.n, np.int32)
    return env.devrt_errors


# -- launches ---------------------------------------------------------------------------
def get_buffer_v2(st: GridState, env, lane: int, a) -> int:
    """``cudaGetParameterBufferV2(func, grid, block, smem)``: a slot remembering the launch."""
    arena = st.tree.arena
    kernel = st.tree.kernels.get(_u(a[0]))
    if kernel is None:
        return _fail(env, lane, D.INVALID_FUNCTION)
    va = arena.take((kernel, _dim3(a[1]), _dim3(a[2]), _u(a[3], 4))) if arena else 0
    return va or _fail(env, lane, D.PENDING_EXCEEDED)


def get_buffer(st: GridState, env, lane: int, a) -> int:
    """``cudaGetParameterBuffer(alignment, size)`` (for ``cudaLaunchDevice``)."""
    arena = st.tree.arena
    if arena is None or _u(a[1]) > arena.size or _u(a[0]) > 256:
        return _fail(env, lane, D.INVALID_VALUE if arena else D.PENDING_EXCEEDED)
    return arena.take(None) or _fail(env, lane, D.PENDING_EXCEEDED)


def launch_v2(st: GridState, env, lane: int, a) -> int:
    """``cudaLaunchDeviceV2(buffer, stream)``."""
    arena = st.tree.arena
    slot = arena.slot_of(_u(a[0])) if arena else None
    if arena is None or slot is None:
        return D.INVALID_VALUE
    config = arena.taken[slot]
    return _record(st, arena, slot, config, _u(a[1])) if config else D.INVALID_VALUE


def launch_v1(st: GridState, env, lane: int, a) -> int:
    """``cudaLaunchDevice(func, buffer, grid, block, smem, stream)``."""
    arena = st.tree.arena
    slot = arena.slot_of(_u(a[1])) if arena else None
    kernel = st.tree.kernels.get(_u(a[0]))
    if arena is None or slot is None or kernel is None:
        return D.INVALID_VALUE if kernel else D.INVALID_FUNCTION
    return _record(st, arena, slot, (kernel, _dim3(a[2]), _dim3(a[3]), _u(a[4], 4)), _u(a[5]))


def _record(st: GridState, arena: Arena, slot: int, config: tuple, stream: int) -> int:
    """Check a launch (kernel, grid, block, shared bytes) and record it on ``st``; the slot
    is given back if it is refused."""
    kernel, grid, block, shared = config
    err = _check(st, kernel, grid, block, shared)
    if err:
        arena.give(slot)
        return err
    arena.taken[slot] = None            # pending: no second LaunchDevice of this buffer
    arena.pending += 1
    child = Child(kernel, grid, block, shared, slot, stream == D.STREAM_TAIL)
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
    def call(st: GridState, env, lane: int, a) -> int:
        if not _u(a[1], 4) & flag:
            return D.INVALID_VALUE
        _put(env, lane, _u(a[0]), st.tree.new_name(), "u8")
        return D.SUCCESS
    return call


def succeed(st, env, lane, a) -> int:
    """Destroying, recording and waiting: nothing to do (issue order orders every launch)."""
    return D.SUCCESS


def last_error(clear: bool):
    """``cudaGetLastError`` (clears it) and ``cudaPeekAtLastError``."""
    def call(st, env, lane: int, a) -> int:
        errs = _errors(env)
        err = int(errs[lane])
        if clear:
            errs[lane] = 0
        return err
    return call


def put_value(value, dtype: str = "i4"):
    """A query writing ``value(st, args)`` (None: ``cudaErrorInvalidValue``) to ``*a[0]``."""
    def call(st, env, lane: int, a) -> int:
        v = value(st, a)
        if v is None:
            return D.INVALID_VALUE
        _put(env, lane, _u(a[0]), v, dtype)
        return D.SUCCESS
    return call


def _attribute(st, a):
    if _u(a[2], 4) != 0:
        return None
    return D.ATTRIBUTES.get(_u(a[1], 4), 0)


def _limit(st, a):
    if _u(a[1], 4) == 4:
        return st.tree.arena.count if st.tree.arena else 0
    return D.LIMITS.get(_u(a[1], 4))


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
}
_NO_ERROR_STATE = {"GetLastError", "PeekAtLastError"}


def _fail(env, lane: int, err: int) -> int:
    """Record ``err`` as the lane's last error; 0 (a NULL pointer) for the caller."""
    _errors(env)[lane] = err
    return 0


def devrt_binder(ins, instr):
    """Binder of ``builtin.<device runtime call>`` (linker.py; see the module docstring)."""
    name = instr.opcode.split(".", 1)[1]
    op = D.canonical(name)
    nargs, handler = HANDLERS.get(op, (None, None))
    rets = instr.args[0].items if isinstance(instr.args[0], Group) else ()
    params = instr.args[1].items if len(instr.args) > 1 and \
        isinstance(instr.args[1], Group) else ()
    if handler is None or len(params) != nargs or len(rets) > 1:
        raise ins.fail(f"device runtime call {name} with {len(params)} arguments is not "
                       f"supported")
    returns_error = not op.startswith("GetParameterBuffer")

    def bind(env):
        args = [env.pvars[p.name] for p in params]
        out = env.pvars[rets[0].name] if rets else None

        def run(idx):
            st = env.devrt
            lanes = env.lanes_all if idx is None else idx
            for lane in lanes.tolist():
                if st is None and op not in _NO_ERROR_STATE:
                    v = D.NOT_SUPPORTED if returns_error else _fail(env, lane, D.NOT_SUPPORTED)
                else:
                    v = handler(st, env, lane, [x[lane] for x in args])
                if returns_error and v and op not in _NO_ERROR_STATE:
                    _errors(env)[lane] = v
                if out is not None:
                    w = out.shape[1]
                    out[lane, :w] = np.frombuffer(int(v).to_bytes(8, "little"), np.uint8)[:w]
        return run
    return bind
