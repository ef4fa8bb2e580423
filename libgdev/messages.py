"""Every command of the gdev ABI: its number, and its request and reply as typed structs.

Each struct is a NamedTuple whose annotations give the wire format (:mod:`libgdev.wire`);
each command constant is a ``Command[Request, Reply]``, so a client call and a daemon handler
are type-checked against the same two classes.  Command numbers keep Gdev's
(``gdev_ioctl_def.h``); new commands (not in Gdev) live below 0x100.
``scripts/gen_abi_header.py`` writes the C header (``libgdev/csrc/gdev_abi.h``) from here.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from libgdev.ipcmessages import *  # noqa: F403  (the GIPC_* structs)
from libgdev.ipcmessages import IpcEvent, IpcEventStream, IpcEventSync, IpcMapping, IpcToken
from libgdev.wire import I32, U32, U64, Command, Empty, Layout, Token

# -- structs shared by several commands ---------------------------------------------------


class MemcpyHost(NamedTuple):
    """A host<->device copy: the device address and where the host side lies
    (``host_kind``: inline in the tail, the staging slots, or pinned buffer ``buf_id``) and
    the context's ``stream`` it is ordered in (0: the legacy stream)."""

    dev_addr: U64
    size: U64
    host_offset: U64
    buf_id: U64
    host_kind: U32
    stream: U32 = 0


class Fence(NamedTuple):
    """A fence id (what an asynchronous command returns, what gsync waits for)."""

    id: U32


class Addr(NamedTuple):
    """A GPU virtual address."""

    addr: U64


class Size(NamedTuple):
    """A size in bytes."""

    size: U64


class Dma(NamedTuple):
    """A pinned buffer: its GPU address, size and the session's id for it."""

    addr: U64
    size: U64
    buf_id: U64


class BufId(NamedTuple):
    """A pinned buffer's id in its session."""

    buf_id: U64


class Dtod(NamedTuple):
    """A copy inside the GPU address space, ordered in the context's ``stream``."""

    dst_addr: U64
    src_addr: U64
    size: U64
    stream: U32 = 0


# -- session and information ----------------------------------------------------------------


class Hello(NamedTuple):
    """The one-time token from the device file's ticket."""

    token: Token


class HelloReply(NamedTuple):
    """The bound session's id and the minor it opened."""

    session: U64
    minor: U32


class Version(NamedTuple):
    """ABI version, feature bits and the daemon's size limits."""

    abi_version: U32
    features: U32
    max_payload: U32
    inline_max: U32


class Count(NamedTuple):
    """Number of virtual GPUs."""

    count: U32  # type: ignore[assignment]  # shadows tuple.count, as the C header names it


class Staging(NamedTuple):
    """The session's staging buffer: total size and slot count (its memfd is passed)."""

    size: U64
    slots: U32


class Limit(NamedTuple):
    """CTX_LIMIT: a GDEV_LIMIT_* limit, LIMIT_* flags and the value to set (with LIMIT_SET;
    else 0)."""

    limit: U32
    flags: U32
    value: U64


class Prio(NamedTuple):
    """SET_PRIORITY: a priority and PRIO_* flags."""

    prio: U32
    flags: U32


class PrioReply(NamedTuple):
    """The effective priority."""

    prio: U32


class Guest(NamedTuple):
    """SET_GUEST: 0 or 1 and GUEST_* flags."""

    guest: U32
    flags: U32


class GuestReply(NamedTuple):
    """Whether the context is a guest now (0 or 1)."""

    guest: U32


class HandleId(NamedTuple):
    """The daemon's id of a context."""

    handle: U64


# -- modules ----------------------------------------------------------------------------------


class ModuleLoad(NamedTuple):
    """A module image of ``size`` bytes; the tail is its name (``name_len`` bytes), then the
    image itself when ``host_kind`` is inline."""

    size: U64
    host_offset: U64
    buf_id: U64
    host_kind: U32
    name_len: U32


class Module(NamedTuple):
    """A loaded module; the reply's tail is its function table (libgdev.moduletable)."""

    module_id: U64
    data_addr: U64
    data_size: U64
    n_functions: U32
    n_globals: U32
    ptx_version: U32
    target_sm: U32


class ModuleRef(NamedTuple):
    """A loaded module's id."""

    module_id: U64


class ModuleLaunch(NamedTuple):
    """Launch function ``function`` of a module; the tail is ``params_len`` bytes of
    packed parameters.  ``stream``: the context's stream it is ordered in; ``flags``:
    LAUNCH_* (``LAUNCH_COOPERATIVE``)."""

    module_id: U64
    function: U32
    grid_x: U32
    grid_y: U32
    grid_z: U32
    block_x: U32
    block_y: U32
    block_z: U32
    shared_dynamic: U32
    params_len: U32
    stream: U32 = 0
    flags: U32 = 0


# -- compute ----------------------------------------------------------------------------------


class Launch(NamedTuple):
    """GLAUNCH: the kernel's code and data; the tail is its name, then its parameters.
    ``stream``: the context's stream it is ordered in; ``flags``: LAUNCH_*."""

    code_addr: U64
    code_size: U64
    data_addr: U64
    grid_x: U32
    grid_y: U32
    grid_z: U32
    block_x: U32
    block_y: U32
    block_z: U32
    shared_dynamic: U32
    name_len: U32
    params_len: U32
    stream: U32 = 0
    flags: U32 = 0


class Sync(NamedTuple):
    """gsync: a fence id, GSYNC_* flags and a timeout (valid with GSYNC_TIMEOUT)."""

    id: U32
    flags: U32
    timeout_us: U64


class Query(NamedTuple):
    """gquery: a GDEV_QUERY_* type."""

    type: U32


class Result(NamedTuple):
    """gquery's value."""

    result: U64


class Tune(NamedTuple):
    """gtune: a GDEV_TUNE_* type and its value."""

    type: U32
    value: U32


class Ref(NamedTuple):
    """gref: map [addr, +size) of this context into session ``slave``."""

    addr: U64
    size: U64
    slave: U64


class Virt(NamedTuple):
    """gvirtget: a place inside pinned buffer ``buf_id``."""

    buf_id: U64
    offset: U64


# -- streams (not in Gdev) ----------------------------------------------------------------------
# A stream is one channel of a context; 0 is the legacy stream every context has.


class StreamCreate(NamedTuple):
    """STREAM_CREATE: STREAM_* flags."""

    flags: U32


class Stream(NamedTuple):
    """A stream of the context (what STREAM_CREATE returns, what STREAM_DESTROY takes)."""

    stream: U32


class StreamWait(NamedTuple):
    """STREAM_WAIT: order ``stream``'s later work after fence ``fence`` (a cross-stream
    wait, as cuStreamWaitEvent; no host wait)."""

    stream: U32
    fence: U32


class StreamSync(NamedTuple):
    """STREAM_SYNC: wait until ``stream`` is idle; ``timeout_us`` valid with
    STREAM_SYNC_TIMEOUT."""

    stream: U32
    flags: U32
    timeout_us: U64


# -- texture objects (not in Gdev; libgdev.texture says what the fields mean) -----------------


TEX_NORMALIZED_COORDS = 0x1  # TexDesc.flags: coordinates in [0, 1)
TEX_READ_NORMALIZED = 0x2  # 8/16-bit integers read as floats in [0, 1] or [-1, 1]
TEX_FILTER_LINEAR = 0x4  # linear (bilinear) filtering, else nearest point
TEX_SURFACE = 0x8  # a surface object (suld/sust), not a texture object (tex)
TEX_MIPMAP_LINEAR = 0x10  # blend the two nearest mip levels, else take the nearest one
TEX_FLAGS = (TEX_NORMALIZED_COORDS | TEX_READ_NORMALIZED | TEX_FILTER_LINEAR | TEX_SURFACE |
             TEX_MIPMAP_LINEAR)
# TexDesc.shape: how a pitch-2D resource's slices are read (0: one plain 1D/2D resource)
TEX_SHAPE_PLAIN = 0
TEX_SHAPE_3D = 1  # depth slices of height rows, sampled in 3D (tex.3d)
TEX_SHAPE_LAYERED_1D = 2  # depth layers of one row (tex.a1d)
TEX_SHAPE_LAYERED_2D = 3  # depth layers of height rows (tex.a2d)
TEX_SHAPE_CUBEMAP = 4  # 6 square faces as 6 slices (tex.cube)
TEX_SHAPE_CUBEMAP_LAYERED = 5  # depth / 6 cubemaps, 6 slices each (tex.acube)


class TexDesc(NamedTuple):
    """TEX_CREATE: a texture descriptor (resource, format, sampling; libgdev.texture)."""

    addr: U64
    width: U64
    height: U64
    pitch: U64
    kind: U32
    format: U32
    channels: U32
    flags: U32
    modes: U32
    border0: U32
    border1: U32
    border2: U32
    border3: U32
    shape: U32  # TEX_SHAPE_*; 0 keeps the plain 1D/2D meaning of the fields above
    depth: U64  # slices (3D depth, layers, 6 x cubemaps); 0 or 1 for a plain resource
    slice_pitch: U64  # bytes from one slice to the next; 0 for a plain resource
    levels: U32  # mip levels packed after level 0 (libgdev.texture); 0 or 1: none
    lod_bias: U32  # float32 bits: added to every level of detail
    min_lod: U32  # float32 bits: the level of detail is clamped to [min_lod, max_lod]
    max_lod: U32  # float32 bits
    max_aniso: U32  # CUDA's maxAnisotropy (0..16); sampling stays isotropic
    reserved: U32  # must be zero


class TexHandle(NamedTuple):
    """A texture object of the context (what TEX_CREATE returns, what TEX_DESTROY takes)."""

    handle: U64


# -- shared device memory ---------------------------------------------------------------------


class ShmGet(NamedTuple):
    """gshmget: a key (GDEV_IPC_PRIVATE for a new segment), flags and size."""

    key: I32
    flags: U32
    size: U64


class ShmId(NamedTuple):
    """A segment id."""

    id: U32


class ShmAt(NamedTuple):
    """gshmat: attach segment ``id`` (at ``addr``, or anywhere for 0)."""

    id: U32
    flags: U32
    addr: U64


class ShmCtl(NamedTuple):
    """gshmctl: a GDEV_IPC_* command; uid, gid and mode for GDEV_IPC_SET only."""

    id: U32
    cmd: U32
    uid: U32
    gid: U32
    mode: U32


class ShmidDs(NamedTuple):
    """A segment's shmid_ds (all zero for commands other than GDEV_IPC_STAT)."""

    key: I32
    id: U32
    size: U64
    uid: U32
    gid: U32
    cuid: U32
    cgid: U32
    mode: U32
    nattch: U32
    cpid: U32
    lpid: U32
    atime: U64
    dtime: U64
    ctime: U64


# -- virtual memory management (CUDA's cuMemAddressReserve, cuMemCreate, cuMemMap ...) -------


class VmReserve(NamedTuple):
    """GVM_RESERVE: a VA range of ``size`` bytes aligned to ``align`` (0: the granularity),
    at ``addr`` if free (0: anywhere)."""

    size: U64
    align: U64
    addr: U64


class VmRange(NamedTuple):
    """A VA range (GVM_FREE: a whole reservation; GVM_UNMAP: whole mappings)."""

    addr: U64
    size: U64


class VmMem(NamedTuple):
    """An allocation handle of the context (what GVM_CREATE returns)."""

    mem: U64


class VmMap(NamedTuple):
    """GVM_MAP: bytes ``[offset, offset + size)`` of allocation ``mem`` at ``addr``."""

    addr: U64
    size: U64
    offset: U64
    mem: U64


class VmAccess(NamedTuple):
    """GVM_SET_ACCESS: access ``flags`` (0 none, 1 read, 3 read-write) for a mapped range."""

    addr: U64
    size: U64
    flags: U32


class VmFlags(NamedTuple):
    """GVM_GET_ACCESS: the access flags of a mapping."""

    flags: U32


class VmToken(NamedTuple):
    """GVM_IMPORT: the token read from an exported allocation's file descriptor."""

    token: Token


# -- layouts (the C header's struct names) and commands ---------------------------------------

EMPTY = Layout("empty", Empty)
# ``stream`` took the place of the padding of memcpy_host, launch and module_launch (a client
# that predates streams sent 0 there: the legacy stream); dtod grew by 8 (stream + pad).
_MEMCPY = Layout("memcpy_host", MemcpyHost, tail=True)
_FENCE = Layout("fence", Fence, pad=4)
_ADDR = Layout("addr", Addr)
_SIZE = Layout("size", Size)
_DTOD = Layout("dtod", Dtod, pad=4)
_STREAM = Layout("stream", Stream, pad=4)
_TEX = Layout("tex_handle", TexHandle)

HELLO = Command(0x01, "HELLO", Layout("hello", Hello),
                Layout("hello_reply", HelloReply, pad=4))
GET_VERSION = Command(0x02, "GET_VERSION", EMPTY, Layout("version", Version),
                      needs_session=False)
DEVICE_COUNT = Command(0x03, "DEVICE_COUNT", EMPTY, Layout("count", Count, pad=4))
GET_STAGING = Command(0x04, "GET_STAGING", EMPTY, Layout("staging", Staging, pad=4),
                      passes_fd=True)
SET_PRIORITY = Command(0x05, "SET_PRIORITY", Layout("prio", Prio),
                       Layout("prio_reply", PrioReply, pad=4))
MODULE_LOAD = Command(0x06, "MODULE_LOAD", Layout("module_load", ModuleLoad, tail=True),
                      Layout("module", Module, tail=True))
MODULE_UNLOAD = Command(0x07, "MODULE_UNLOAD", Layout("module_ref", ModuleRef), EMPTY)
MODULE_LAUNCH = Command(0x08, "MODULE_LAUNCH",
                        Layout("module_launch", ModuleLaunch, pad=4, tail=True), _FENCE)
SET_GUEST = Command(0x09, "SET_GUEST", Layout("guest", Guest),
                    Layout("guest_reply", GuestReply, pad=4))
STREAM_CREATE = Command(0x0A, "STREAM_CREATE", Layout("stream_create", StreamCreate, pad=4),
                        _STREAM)
STREAM_DESTROY = Command(0x0B, "STREAM_DESTROY", _STREAM, EMPTY)
STREAM_WAIT = Command(0x0C, "STREAM_WAIT", Layout("stream_wait", StreamWait), EMPTY)
STREAM_SYNC = Command(0x0D, "STREAM_SYNC", Layout("stream_sync", StreamSync), EMPTY)
TEX_CREATE = Command(0x0E, "TEX_CREATE", Layout("tex_desc", TexDesc), _TEX)
TEX_DESTROY = Command(0x0F, "TEX_DESTROY", _TEX, EMPTY)
GET_HANDLE = Command(0x10, "GET_HANDLE", EMPTY, Layout("handle", HandleId))
# device printf output of the context, up to ``size`` bytes, oldest first (the reply's tail)
PRINTF_DRAIN = Command(0x11, "PRINTF_DRAIN", _SIZE, Layout("data", Empty, tail=True))
# a context limit (the device heap's size): set it (LIMIT_SET) or only read it; the reply
# is the value in effect
CTX_LIMIT = Command(0x12, "CTX_LIMIT", Layout("limit", Limit), _SIZE)
# the pinned data segment of a module with __managed__ variables: its address and size (buf_id
# 0: the module owns it) and its memfd, which the client maps at that address
MODULE_DATA = Command(0x13, "MODULE_DATA", Layout("module_ref", ModuleRef), Layout("dma", Dma),
                      passes_fd=True)
GMALLOC = Command(0x100, "GMALLOC", _SIZE, _ADDR)
GFREE = Command(0x101, "GFREE", _ADDR, _SIZE)
GMALLOC_DMA = Command(0x102, "GMALLOC_DMA", _SIZE, Layout("dma", Dma), passes_fd=True)
GFREE_DMA = Command(0x103, "GFREE_DMA", Layout("buf", BufId), _SIZE)
GMEMCPY_TO_DEVICE = Command(0x106, "GMEMCPY_TO_DEVICE", _MEMCPY, EMPTY)
GMEMCPY_TO_DEVICE_ASYNC = Command(0x107, "GMEMCPY_TO_DEVICE_ASYNC", _MEMCPY, _FENCE)
GMEMCPY_FROM_DEVICE = Command(0x108, "GMEMCPY_FROM_DEVICE", _MEMCPY,
                              Layout("data", Empty, tail=True))
GMEMCPY_FROM_DEVICE_ASYNC = Command(0x109, "GMEMCPY_FROM_DEVICE_ASYNC", _MEMCPY, _FENCE)
GMEMCPY = Command(0x110, "GMEMCPY", _DTOD, EMPTY)
GMEMCPY_ASYNC = Command(0x111, "GMEMCPY_ASYNC", _DTOD, _FENCE)
GLAUNCH = Command(0x112, "GLAUNCH", Layout("launch", Launch, pad=4, tail=True), _FENCE)
GSYNC = Command(0x113, "GSYNC", Layout("sync", Sync), EMPTY)
GBARRIER = Command(0x114, "GBARRIER", EMPTY, EMPTY)
GQUERY = Command(0x115, "GQUERY", Layout("query", Query, pad=4), Layout("result", Result))
GTUNE = Command(0x116, "GTUNE", Layout("tune", Tune), EMPTY)
GSHMGET = Command(0x117, "GSHMGET", Layout("shmget", ShmGet), Layout("shmid", ShmId, pad=4))
GSHMAT = Command(0x118, "GSHMAT", Layout("shmat", ShmAt), _ADDR)
GSHMDT = Command(0x119, "GSHMDT", _ADDR, EMPTY)
GSHMCTL = Command(0x120, "GSHMCTL", Layout("shmctl", ShmCtl, pad=4),
                  Layout("shmid_ds", ShmidDs))
GREF = Command(0x121, "GREF", Layout("ref", Ref), _ADDR)
GUNREF = Command(0x122, "GUNREF", _ADDR, EMPTY)
GVIRTGET = Command(0x124, "GVIRTGET", Layout("virt", Virt), _ADDR)
_VM_RANGE = Layout("vm_range", VmRange)
_VM_MEM = Layout("vm_mem", VmMem)
GVM_RESERVE = Command(0x20, "GVM_RESERVE", Layout("vm_reserve", VmReserve), _ADDR)
GVM_FREE = Command(0x21, "GVM_FREE", _VM_RANGE, EMPTY)
GVM_CREATE = Command(0x22, "GVM_CREATE", _SIZE, _VM_MEM)
GVM_RELEASE = Command(0x23, "GVM_RELEASE", _VM_MEM, EMPTY)
GVM_MAP = Command(0x24, "GVM_MAP", Layout("vm_map", VmMap), EMPTY)
GVM_UNMAP = Command(0x25, "GVM_UNMAP", _VM_RANGE, EMPTY)
GVM_SET_ACCESS = Command(0x26, "GVM_SET_ACCESS", Layout("vm_access", VmAccess, pad=4), EMPTY)
GVM_GET_ACCESS = Command(0x27, "GVM_GET_ACCESS", _ADDR, Layout("vm_flags", VmFlags, pad=4))
GVM_RETAIN = Command(0x28, "GVM_RETAIN", _ADDR, _VM_MEM)
GVM_SIZE = Command(0x29, "GVM_SIZE", _VM_MEM, _SIZE)
# the reply passes a new fd holding the token that GVM_IMPORT takes
GVM_EXPORT = Command(0x2A, "GVM_EXPORT", _VM_MEM, EMPTY, passes_fd=True)
GVM_IMPORT = Command(0x2B, "GVM_IMPORT", Layout("vm_token", VmToken), _VM_MEM)
_IPC_TOKEN = Layout("ipc_token", IpcToken)
_IPC_EVENT = Layout("ipc_event", IpcEvent, pad=4)
_IPC_EVENT_STREAM = Layout("ipc_event_stream", IpcEventStream)
GIPC_EXPORT = Command(0x30, "GIPC_EXPORT", _ADDR, _IPC_TOKEN)
GIPC_OPEN = Command(0x31, "GIPC_OPEN", _IPC_TOKEN, Layout("ipc_mapping", IpcMapping))
GIPC_CLOSE = Command(0x32, "GIPC_CLOSE", _ADDR, EMPTY)
GIPC_EVENT_NEW = Command(0x33, "GIPC_EVENT_NEW", EMPTY, _IPC_TOKEN)
GIPC_EVENT_OPEN = Command(0x34, "GIPC_EVENT_OPEN", _IPC_TOKEN, _IPC_EVENT)
GIPC_EVENT_RECORD = Command(0x35, "GIPC_EVENT_RECORD", _IPC_EVENT_STREAM, EMPTY)
GIPC_EVENT_SYNC = Command(0x36, "GIPC_EVENT_SYNC", Layout("ipc_event_sync", IpcEventSync),
                          EMPTY)
GIPC_EVENT_WAIT = Command(0x37, "GIPC_EVENT_WAIT", _IPC_EVENT_STREAM, EMPTY)
GIPC_EVENT_CLOSE = Command(0x38, "GIPC_EVENT_CLOSE", _IPC_EVENT, EMPTY)

# Every command, in the order of the C header's X-macro.
COMMANDS: tuple[Command[Any, Any], ...] = (
    HELLO, GET_VERSION, DEVICE_COUNT, GET_STAGING, SET_PRIORITY, MODULE_LOAD, MODULE_UNLOAD,
    MODULE_LAUNCH, SET_GUEST, STREAM_CREATE, STREAM_DESTROY, STREAM_WAIT, STREAM_SYNC,
    TEX_CREATE, TEX_DESTROY, GET_HANDLE, PRINTF_DRAIN, GMALLOC, GFREE, GMALLOC_DMA, GFREE_DMA,
    GMEMCPY_TO_DEVICE, GMEMCPY_TO_DEVICE_ASYNC, GMEMCPY_FROM_DEVICE, GMEMCPY_FROM_DEVICE_ASYNC,
    GMEMCPY, GMEMCPY_ASYNC, GLAUNCH, GSYNC, GBARRIER, GQUERY, GTUNE, GSHMGET, GSHMAT, GSHMDT,
    GSHMCTL, GREF, GUNREF, GVIRTGET, GVM_RESERVE, GVM_FREE, GVM_CREATE, GVM_RELEASE, GVM_MAP,
    GVM_UNMAP, GVM_SET_ACCESS, GVM_GET_ACCESS, GVM_RETAIN, GVM_SIZE, GVM_EXPORT, GVM_IMPORT,
    CTX_LIMIT, GIPC_EXPORT, GIPC_OPEN, GIPC_CLOSE, GIPC_EVENT_NEW, GIPC_EVENT_OPEN,
    GIPC_EVENT_RECORD, GIPC_EVENT_SYNC, GIPC_EVENT_WAIT, GIPC_EVENT_CLOSE, MODULE_DATA,
)
BY_NUMBER: dict[int, Command[Any, Any]] = {c.number: c for c in COMMANDS}
BY_NAME: dict[str, Command[Any, Any]] = {c.name: c for c in COMMANDS}
