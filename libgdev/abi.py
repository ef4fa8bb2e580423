"""The gdev ioctl ABI: one definition of every message, shared by libgdev and gdevd.

Theory of operation
-------------------
Gdev's user library talks to the kernel with ``ioctl(fd, GDEV_IOCTL_*, &struct)``.  gdev-py
carries the same calls as messages on a Unix stream socket (see ``docs/abi.md``).  Every
message is a fixed 32-byte little-endian header followed by ``payload_len`` bytes::

    magic u32 | abi_version u16 | flags u16 | command u32 | payload_len u32 |
    request_id u64 | reserved u64 (must be 0)

A request's payload is the command's argument struct, optionally followed by a variable tail
(inline copy data, a kernel's name and parameters).  A reply repeats the command and request
id, sets :data:`FLAG_REPLY`, and carries ``status i32 | msg_len u32``: on success status 0,
msg_len 0 and the command's output struct and tail; on failure a positive errno and the
daemon's reason as ``msg_len`` bytes of UTF-8 (at most :data:`MSG_MAX`), nothing else.
Structs use fixed-width fields, explicit zero padding and sizes that are multiples of 8
(Documentation/process/botching-up-ioctls.rst).  No pointers cross the boundary: host memory
is named by a shared buffer id and an offset.

This module does no I/O.  :class:`ReceiveBuffer` assembles frames from any sequence of byte
chunks (``None`` means "need more data", like h11's receive buffer); :func:`decode_request`
and :func:`decode_reply` turn a frame into fields or raise :class:`ProtocolError`, whose
``errno`` is what the daemon answers.  A framing error (bad magic, oversized length) is
:attr:`ProtocolError.fatal`: the byte stream cannot be resynchronised and the session ends.
"""

from __future__ import annotations

import errno as _errno
import struct
from collections import namedtuple
from dataclasses import dataclass
from typing import Any, NamedTuple

from libgdev.errors import GdevError

MAGIC = 0x56454447  # b"GDEV" read as a little-endian u32
ABI_VERSION = 2  # 2: error replies carry the daemon's message
HEADER = struct.Struct("<IHHIIQQ")
HEADER_SIZE = HEADER.size  # 32
MAX_PAYLOAD = (1 << 20) + 4096  # largest payload either side accepts
INLINE_MAX = 1 << 20  # largest copy carried inside a message (the direct path)

FLAG_REPLY = 0x1
KNOWN_FLAGS = FLAG_REPLY

# Features reported by GET_VERSION (bit set).
FEATURE_STAGING = 1 << 0  # per-context staging buffers for pageable copies
FEATURE_DMA_FD = 1 << 1  # gmalloc_dma passes its memfd with SCM_RIGHTS
FEATURE_INLINE = 1 << 2  # small copies travel inside the message
FEATURE_ASYNC = 1 << 3  # *_ASYNC commands return fence ids
FEATURE_SHM = 1 << 4  # GSHMGET/AT/DT/CTL (System V shared device memory)
FEATURE_PRIORITY = 1 << 5  # SET_PRIORITY: per-context priority override
FEATURE_MODULES = 1 << 6  # MODULE_LOAD/UNLOAD/LAUNCH: the daemon loads modules
FEATURE_ERROR_MSG = 1 << 7  # error replies carry the daemon's message
FEATURE_GUEST = 1 << 8  # SET_GUEST: a context makes itself a guest (or a host again)
FEATURE_STREAMS = 1 << 9  # STREAM_*: streams are channels; copies and launches name one
FEATURES = (FEATURE_STAGING | FEATURE_DMA_FD | FEATURE_INLINE | FEATURE_ASYNC | FEATURE_SHM
            | FEATURE_PRIORITY | FEATURE_MODULES | FEATURE_ERROR_MSG | FEATURE_GUEST
            | FEATURE_STREAMS)

# Where the host side of a copy lives (gdev_ioctl_dma's src_buf/dst_buf, without pointers).
HOST_INLINE = 0  # in the request tail (HtoD) or the reply tail (DtoH)
HOST_STAGING = 1  # the session's staging buffer, at host_offset
HOST_DMA = 2  # the pinned buffer buf_id, at host_offset
HOST_KINDS = (HOST_INLINE, HOST_STAGING, HOST_DMA)

GSYNC_TIMEOUT = 0x1  # gsync request flag: timeout_us is valid (else wait forever)
PRIO_CLEAR = 0x1  # SET_PRIORITY flag: drop the override (prio must be 0)
PRIO_GET = 0x2  # SET_PRIORITY flag: change nothing, only report (prio must be 0)
PRIO_FLAGS = PRIO_CLEAR | PRIO_GET
GUEST_CLEAR = 0x1  # SET_GUEST flag: drop the override (guest must be 0)
GUEST_GET = 0x2  # SET_GUEST flag: change nothing, only report (guest must be 0)
GUEST_FLAGS = GUEST_CLEAR | GUEST_GET
STREAM_NON_BLOCKING = 0x1  # STREAM_CREATE flag: no implicit order with the legacy stream 0
STREAM_FLAGS = STREAM_NON_BLOCKING
STREAM_SYNC_TIMEOUT = 0x1  # STREAM_SYNC flag: timeout_us is valid (else wait forever)

TOKEN_SIZE = 32
Tail = bytes | memoryview  # a message's variable part, as handlers and callers see it
MSG_MAX = 1024  # longest error message (UTF-8 bytes) an error reply carries


class ProtocolError(GdevError):
    """A message that cannot be accepted.  ``errno`` is the status the daemon replies with
    (``detail`` its message); ``fatal`` means the byte stream is lost and the session must
    close."""

    def __init__(self, err: int, detail: str, fatal: bool = False) -> None:
        super().__init__(err, detail)
        self.fatal = fatal

    def __str__(self) -> str:
        return f"[{_errno.errorcode.get(self.errno, self.errno)}] {self.detail}"


# Fields that senders may leave out (0): the stream of copies and launches, which took the
# place of padding, so a client that predates streams still sends the legacy stream.
OPTIONAL = frozenset({"stream"})


class Header(NamedTuple):
    """The fixed message header (see the module docstring)."""

    magic: int
    version: int
    flags: int
    command: int
    payload_len: int
    request_id: int
    reserved: int


class Frame(NamedTuple):
    """One whole message: its header and its payload (bytes, or a read-only view of the
    receive buffer's memory that no later data overwrites)."""

    header: Header
    payload: bytes | memoryview


class Layout:
    """A fixed struct of named fields (``(name, format)`` pairs, little-endian) plus an
    optional variable tail.  Fields named ``_pad*`` must be zero; fields in
    :data:`OPTIONAL` (fields added where padding was) are 0 unless given."""

    def __init__(self, name: str, fields: tuple[tuple[str, str], ...] = (),
                 tail: bool = False) -> None:
        self.name = name
        self.fields = fields
        self.defaults = {n: 0 for n, _ in fields if n in OPTIONAL}
        self.struct = struct.Struct("<" + "".join(fmt for _, fmt in fields))
        if self.struct.size % 8:
            raise ValueError(f"{name}: size {self.struct.size} is not a multiple of 8")
        self.tail = tail
        public = [n for n, _ in fields if not n.startswith("_pad")]
        self.type = namedtuple(name, public)  # type: ignore[misc]
        self._names = tuple(None if n.startswith("_pad") else n for n, _ in fields)
        self._public_index = [i for i, (n, _) in enumerate(fields) if not n.startswith("_pad")]
        self._pad_index = [i for i, (n, _) in enumerate(fields) if n.startswith("_pad")]
        self._make = self.type._make  # type: ignore[attr-defined]
        fmt = self.struct.format.lstrip("<")
        self.request_message = struct.Struct(HEADER.format + fmt)  # header + fields
        self.reply_message = struct.Struct(HEADER.format + "iI" + fmt)  # + status, msg_len

    def pack(self, values: dict[str, Any], tail: bytes = b"") -> bytes:
        """Encode ``values`` (every public field) and ``tail``; ValueError on bad values."""
        if tail and not self.tail:
            raise ValueError(f"{self.name} takes no tail")
        if self.defaults:
            values = {**self.defaults, **values}
        args = [0 if n is None else values[n] for n in self._names]
        try:
            body = self.struct.pack(*args)
            return body + bytes(tail) if tail else body
        except struct.error as exc:
            raise ValueError(f"{self.name}: {exc}") from None

    def pack_message(self, whole: struct.Struct, head: tuple[int, ...],
                     values: dict[str, Any]) -> bytes:
        """``head`` (the header's values, and a reply's status and pad) and the fields in one
        ``pack`` call of ``whole`` (:attr:`request_message` or :attr:`reply_message`)."""
        if self.defaults:
            values = {**self.defaults, **values}
        args = [0 if n is None else values[n] for n in self._names]
        try:
            return whole.pack(*head, *args)
        except struct.error as exc:
            raise ValueError(f"{self.name}: {exc}") from None

    def unpack(self, payload: bytes | memoryview) -> tuple[Any, memoryview]:
        """Decode a payload into (namedtuple, tail) or raise ProtocolError(EINVAL).  The tail
        is a view of ``payload`` (inline copy data is not copied here)."""
        size = self.struct.size
        if len(payload) < size or (len(payload) > size and not self.tail):
            raise ProtocolError(_errno.EINVAL,
                                f"{self.name}: payload of {len(payload)} bytes, want {size}")
        raw = self.struct.unpack_from(payload)
        if not self._pad_index:
            fields = self._make(raw)
        elif any(raw[i] for i in self._pad_index):
            raise ProtocolError(_errno.EINVAL, f"{self.name}: nonzero padding")
        else:
            fields = self._make([raw[i] for i in self._public_index])
        return fields, memoryview(payload)[size:]


@dataclass(frozen=True)
class Command:
    """One ioctl command: its number and name, request and reply layouts, and whether the
    reply passes a file descriptor (SCM_RIGHTS)."""

    number: int
    name: str
    request: Layout
    reply: Layout
    passes_fd: bool = False
    needs_session: bool = True


def _L(name: str, *fields: tuple[str, str], tail: bool = False) -> Layout:
    return Layout(name, fields, tail)


_EMPTY = _L("empty")
# ``stream``: the stream of the context the copy or launch is ordered in (0: the legacy
# stream, what every client that predates streams sends in the former padding).
_MEMCPY = _L("memcpy_host", ("dev_addr", "Q"), ("size", "Q"), ("host_offset", "Q"),
             ("buf_id", "Q"), ("host_kind", "I"), ("stream", "I"), tail=True)
_FENCE = _L("fence", ("id", "I"), ("_pad0", "I"))
_ADDR = _L("addr", ("addr", "Q"))
_SIZE = _L("size", ("size", "Q"))
_DMA = _L("dma", ("addr", "Q"), ("size", "Q"), ("buf_id", "Q"))
_DTOD = _L("dtod", ("dst_addr", "Q"), ("src_addr", "Q"), ("size", "Q"), ("stream", "I"),
           ("_pad0", "I"))
_STREAM = _L("stream", ("stream", "I"), ("_pad0", "I"))

# New commands (not in Gdev) live below 0x10; Gdev's numbers are kept as they are.
COMMANDS: tuple[Command, ...] = (
    Command(0x01, "HELLO", _L("hello", ("token", f"{TOKEN_SIZE}s")),
            _L("hello_reply", ("session", "Q"), ("minor", "I"), ("_pad0", "I"))),
    Command(0x02, "GET_VERSION", _EMPTY,
            _L("version", ("abi_version", "I"), ("features", "I"), ("max_payload", "I"),
               ("inline_max", "I")), needs_session=False),
    Command(0x03, "DEVICE_COUNT", _EMPTY, _L("count", ("count", "I"), ("_pad0", "I"))),
    Command(0x04, "GET_STAGING", _EMPTY,
            _L("staging", ("size", "Q"), ("slots", "I"), ("_pad0", "I")), passes_fd=True),
    Command(0x05, "SET_PRIORITY", _L("prio", ("prio", "I"), ("flags", "I")),
            _L("prio_reply", ("prio", "I"), ("_pad0", "I"))),
    Command(0x06, "MODULE_LOAD",
            _L("module_load", ("size", "Q"), ("host_offset", "Q"), ("buf_id", "Q"),
               ("host_kind", "I"), ("name_len", "I"), tail=True),
            _L("module", ("module_id", "Q"), ("data_addr", "Q"), ("data_size", "Q"),
               ("n_functions", "I"), ("n_globals", "I"), ("ptx_version", "I"),
               ("target_sm", "I"), tail=True)),
    Command(0x07, "MODULE_UNLOAD", _L("module_ref", ("module_id", "Q")), _EMPTY),
    Command(0x08, "MODULE_LAUNCH",
            _L("module_launch", ("module_id", "Q"), ("function", "I"),
               ("grid_x", "I"), ("grid_y", "I"), ("grid_z", "I"),
               ("block_x", "I"), ("block_y", "I"), ("block_z", "I"),
               ("shared_dynamic", "I"), ("params_len", "I"), ("stream", "I"), tail=True),
            _FENCE),
    Command(0x09, "SET_GUEST", _L("guest", ("guest", "I"), ("flags", "I")),
            _L("guest_reply", ("guest", "I"), ("_pad0", "I"))),
    Command(0x0A, "STREAM_CREATE", _L("stream_create", ("flags", "I"), ("_pad0", "I")),
            _STREAM),
    Command(0x0B, "STREAM_DESTROY", _STREAM, _EMPTY),
    Command(0x0C, "STREAM_WAIT", _L("stream_wait", ("stream", "I"), ("fence", "I")), _EMPTY),
    Command(0x0D, "STREAM_SYNC",
            _L("stream_sync", ("stream", "I"), ("flags", "I"), ("timeout_us", "Q")), _EMPTY),
    Command(0x10, "GET_HANDLE", _EMPTY, _L("handle", ("handle", "Q"))),
    Command(0x100, "GMALLOC", _SIZE, _ADDR),
    Command(0x101, "GFREE", _ADDR, _SIZE),
    Command(0x102, "GMALLOC_DMA", _SIZE, _DMA, passes_fd=True),
    Command(0x103, "GFREE_DMA", _L("buf", ("buf_id", "Q")), _SIZE),
    Command(0x106, "GMEMCPY_TO_DEVICE", _MEMCPY, _EMPTY),
    Command(0x107, "GMEMCPY_TO_DEVICE_ASYNC", _MEMCPY, _FENCE),
    Command(0x108, "GMEMCPY_FROM_DEVICE", _MEMCPY, _L("data", tail=True)),
    Command(0x109, "GMEMCPY_FROM_DEVICE_ASYNC", _MEMCPY, _FENCE),
    Command(0x110, "GMEMCPY", _DTOD, _EMPTY),
    Command(0x111, "GMEMCPY_ASYNC", _DTOD, _FENCE),
    Command(0x112, "GLAUNCH",
            _L("launch", ("code_addr", "Q"), ("code_size", "Q"), ("data_addr", "Q"),
               ("grid_x", "I"), ("grid_y", "I"), ("grid_z", "I"),
               ("block_x", "I"), ("block_y", "I"), ("block_z", "I"),
               ("shared_dynamic", "I"), ("name_len", "I"), ("params_len", "I"),
               ("stream", "I"), tail=True), _FENCE),
    Command(0x113, "GSYNC", _L("sync", ("id", "I"), ("flags", "I"), ("timeout_us", "Q")),
            _EMPTY),
    Command(0x114, "GBARRIER", _EMPTY, _EMPTY),
    Command(0x115, "GQUERY", _L("query", ("type", "I"), ("_pad0", "I")),
            _L("result", ("result", "Q"))),
    Command(0x116, "GTUNE", _L("tune", ("type", "I"), ("value", "I")), _EMPTY),
    Command(0x117, "GSHMGET", _L("shmget", ("key", "i"), ("flags", "I"), ("size", "Q")),
            _L("shmid", ("id", "I"), ("_pad0", "I"))),
    Command(0x118, "GSHMAT", _L("shmat", ("id", "I"), ("flags", "I"), ("addr", "Q")), _ADDR),
    Command(0x119, "GSHMDT", _ADDR, _EMPTY),
    Command(0x120, "GSHMCTL",
            _L("shmctl", ("id", "I"), ("cmd", "I"), ("uid", "I"), ("gid", "I"), ("mode", "I"),
               ("_pad0", "I")),
            _L("shmid_ds", ("key", "i"), ("id", "I"), ("size", "Q"), ("uid", "I"), ("gid", "I"),
               ("cuid", "I"), ("cgid", "I"), ("mode", "I"), ("nattch", "I"), ("cpid", "I"),
               ("lpid", "I"), ("atime", "Q"), ("dtime", "Q"), ("ctime", "Q"))),
    Command(0x121, "GREF", _L("ref", ("addr", "Q"), ("size", "Q"), ("slave", "Q")), _ADDR),
    Command(0x122, "GUNREF", _ADDR, _EMPTY),
    Command(0x124, "GVIRTGET", _L("virt", ("buf_id", "Q"), ("offset", "Q")), _ADDR),
)

BY_NUMBER: dict[int, Command] = {c.number: c for c in COMMANDS}
BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS}
STATUS = struct.Struct("<iI")


def encode_header(command: int, request_id: int, payload_len: int, flags: int = 0) -> bytes:
    """The header of a message whose payload (struct + tail) is ``payload_len`` bytes."""
    if payload_len > MAX_PAYLOAD:
        raise ValueError(f"payload of {payload_len} bytes exceeds {MAX_PAYLOAD}")
    return HEADER.pack(MAGIC, ABI_VERSION, flags, command, payload_len, request_id, 0)


def encode(command: int, request_id: int, payload: bytes, flags: int = 0) -> bytes:
    """One whole message: header + payload."""
    return encode_header(command, request_id, len(payload), flags) + payload


def encode_request_head(cmd: Command, request_id: int, fields: dict[str, Any],
                        tail_len: int = 0) -> bytes:
    """Header and argument struct of a request whose tail (sent separately) is ``tail_len``
    bytes long."""
    lay = cmd.request
    if tail_len and not lay.tail:
        raise ValueError(f"{lay.name} takes no tail")
    plen = lay.struct.size + tail_len
    if plen > MAX_PAYLOAD:
        raise ValueError(f"payload of {plen} bytes exceeds {MAX_PAYLOAD}")
    head = (MAGIC, ABI_VERSION, 0, cmd.number, plen, request_id, 0)
    return lay.pack_message(lay.request_message, head, fields)


def encode_request(name: str, request_id: int, tail: bytes = b"", **fields: Any) -> bytes:
    """Encode the request of command ``name`` with its fields and optional tail."""
    head = encode_request_head(BY_NAME[name], request_id, fields, len(tail))
    return head + bytes(tail) if tail else head


def encode_reply(cmd: Command, request_id: int, status: int = 0, tail: Tail = b"",
                 **fields: Any) -> bytes:
    """Encode a reply: an errno ``status`` (with its message in ``tail``, see
    :func:`encode_error`), or status 0 with the output fields and tail."""
    if status:
        return encode_error(cmd.number, request_id, status, bytes(tail).decode(errors="replace"))
    lay = cmd.reply
    if len(tail) and not lay.tail:
        raise ValueError(f"{lay.name} takes no tail")
    plen = lay.reply_message.size - HEADER_SIZE + len(tail)
    if plen > MAX_PAYLOAD:
        raise ValueError(f"payload of {plen} bytes exceeds {MAX_PAYLOAD}")
    head = (MAGIC, ABI_VERSION, FLAG_REPLY, cmd.number, plen, request_id, 0, 0, 0)
    msg = lay.pack_message(lay.reply_message, head, fields)
    return b"".join((msg, tail)) if len(tail) else msg  # one copy of the tail


def parse_simple_reply(cmd: Command, request_id: int, data: bytes | memoryview) -> Any | None:
    """Fast path for the common case: if ``data`` is exactly one successful reply to
    (``cmd``, ``request_id``) without a tail, its fields; otherwise None, and the caller takes
    the general path (:class:`ReceiveBuffer` and :func:`decode_reply`), which validates and
    reports everything else."""
    lay = cmd.reply
    whole = lay.reply_message
    if len(data) != whole.size:
        return None
    raw = whole.unpack_from(data)
    if raw[:9] != (MAGIC, ABI_VERSION, FLAG_REPLY, cmd.number, whole.size - HEADER_SIZE,
                   request_id, 0, 0, 0):
        return None
    values = raw[9:]
    if any(values[i] for i in lay._pad_index):
        return None
    return lay._make(values if not lay._pad_index else [values[i] for i in lay._public_index])


class Request(NamedTuple):
    """A request taken by :func:`parse_simple_request`: command, request id, fields."""

    command: Command
    request_id: int
    fields: Any


_U32 = struct.Struct("<I")


def parse_simple_request(data: bytes | memoryview) -> Request | None:
    """The daemon's fast path, the mirror of :func:`parse_simple_reply`: if ``data`` is
    exactly one valid request without a tail, it; otherwise None, and the caller takes the
    general path (:class:`ReceiveBuffer` and :func:`decode_request`), which validates and
    reports everything else."""
    if len(data) < HEADER_SIZE or (cmd := BY_NUMBER.get(_U32.unpack_from(data, 8)[0])) is None:
        return None
    lay = cmd.request
    whole = lay.request_message
    if len(data) != whole.size:
        return None
    raw = whole.unpack_from(data)
    if raw[:5] != (MAGIC, ABI_VERSION, 0, cmd.number, whole.size - HEADER_SIZE) or raw[6]:
        return None
    values = raw[7:]
    if not lay._pad_index:
        return Request(cmd, raw[5], lay._make(values))
    if any(values[i] for i in lay._pad_index):
        return None
    return Request(cmd, raw[5], lay._make([values[i] for i in lay._public_index]))


def clip_message(message: str) -> bytes:
    """``message`` as UTF-8, cut to at most :data:`MSG_MAX` bytes on a character boundary."""
    raw = message.encode("utf-8", errors="replace")
    if len(raw) <= MSG_MAX:
        return raw
    return raw[:MSG_MAX].decode("utf-8", errors="ignore").encode("utf-8")


def encode_error(command: int, request_id: int, status: int, message: str = "") -> bytes:
    """An error reply for any command number (known or not): the errno ``status`` and the
    reason ``message`` (clipped by :func:`clip_message`)."""
    if status <= 0:
        raise ValueError(f"error status {status} is not a positive errno")
    msg = clip_message(message)
    return encode(command, request_id, STATUS.pack(status, len(msg)) + msg, FLAG_REPLY)


def _check_header(h: Header, want_reply: bool) -> Command | None:
    if h.version != ABI_VERSION:
        raise ProtocolError(_errno.EPROTONOSUPPORT, f"ABI version {h.version}")
    if h.reserved:
        raise ProtocolError(_errno.EINVAL, "nonzero reserved header field")
    if h.flags & ~KNOWN_FLAGS or bool(h.flags & FLAG_REPLY) != want_reply:
        raise ProtocolError(_errno.EINVAL, f"bad flags 0x{h.flags:x}")
    return BY_NUMBER.get(h.command)


def decode_request(frame: Frame) -> tuple[Command, Any, memoryview]:
    """Validate a request frame: (command, fields, tail), or ProtocolError with the errno
    to reply with."""
    cmd = _check_header(frame.header, want_reply=False)
    if cmd is None:
        raise ProtocolError(_errno.ENOTTY, f"unknown command 0x{frame.header.command:x}")
    fields, tail = cmd.request.unpack(frame.payload)
    return cmd, fields, tail


def decode_reply(frame: Frame) -> tuple[Command | None, int, Any, bytes | memoryview]:
    """Validate a reply frame: (command, status, fields or None, tail).  An error reply
    (status > 0) may answer a command this side does not know (command None); its tail is
    the daemon's message, valid UTF-8 of at most :data:`MSG_MAX` bytes."""
    cmd = _check_header(frame.header, want_reply=True)
    if len(frame.payload) < STATUS.size:
        raise ProtocolError(_errno.EPROTO, "reply without status")
    status, msg_len = STATUS.unpack_from(frame.payload)
    if status < 0 or (msg_len and not status) or msg_len > MSG_MAX:
        raise ProtocolError(_errno.EPROTO, "malformed reply status")
    if status:
        if len(frame.payload) != STATUS.size + msg_len:
            raise ProtocolError(_errno.EPROTO, "error reply with a body")
        msg = bytes(frame.payload[STATUS.size:])
        try:
            msg.decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError(_errno.EPROTO, "error message is not UTF-8") from None
        return cmd, status, None, msg
    if cmd is None:
        raise ProtocolError(_errno.EPROTO, f"success reply to unknown command "
                                           f"0x{frame.header.command:x}")
    fields, tail = cmd.reply.unpack(frame.payload[STATUS.size:])
    return cmd, 0, fields, tail


class ReceiveBuffer:
    """Assembles frames from arbitrary byte chunks.

    ``feed(data)`` appends; ``next_frame()`` returns the next whole :class:`Frame`, or None
    when more data is needed; it raises a fatal ProtocolError on a bad magic or a payload
    length above ``max_payload`` (the stream cannot be resynchronised after either).
    """

    def __init__(self, max_payload: int = MAX_PAYLOAD) -> None:
        self._buf = bytearray()
        self._max = max_payload

    def __len__(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append received bytes."""
        self._buf += data

    def next_frame(self) -> Frame | None:
        """Pop one whole frame, or None if the buffer holds only part of one."""
        if len(self._buf) < HEADER_SIZE:
            return None
        header = Header._make(HEADER.unpack_from(self._buf))
        if header.magic != MAGIC:
            raise ProtocolError(_errno.EPROTO, f"bad magic 0x{header.magic:08x}", fatal=True)
        if header.payload_len > self._max:
            raise ProtocolError(_errno.EMSGSIZE, f"payload of {header.payload_len} bytes",
                                fatal=True)
        end = HEADER_SIZE + header.payload_len
        if len(self._buf) < end:
            return None
        if len(self._buf) == end:  # the common case: hand the memory over, no copy
            whole, self._buf = self._buf, bytearray()
            return Frame(header, memoryview(whole).toreadonly()[HEADER_SIZE:])
        with memoryview(self._buf) as view:
            payload = bytes(view[HEADER_SIZE:end])
        del self._buf[:end]
        return Frame(header, payload)
