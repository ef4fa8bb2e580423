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
is named by a shared buffer id and an offset.  Every argument struct is a typed class
(:mod:`libgdev.messages`) and every command a ``Command[Request, Reply]``, so a client's
call and the daemon's handler are checked against the same two classes.

This module does no I/O.  :class:`ReceiveBuffer` assembles frames from any sequence of byte
chunks (``None`` means "need more data", like h11's receive buffer); :func:`decode_request`
and :func:`decode_reply` turn a frame into typed structs or raise :class:`ProtocolError`, whose
``errno`` is what the daemon answers.  A framing error (bad magic, oversized length) is
:attr:`ProtocolError.fatal`: the byte stream cannot be resynchronised and the session ends.
"""

from __future__ import annotations

import errno as _errno
import struct
from typing import Any, NamedTuple

# abi.X names every struct, command and building block (libgdev.messages, libgdev.wire).
from libgdev.messages import *  # noqa: F403
from libgdev.messages import BY_NAME, BY_NUMBER
from libgdev.wire import *  # noqa: F403
from libgdev.wire import (
    ABI_VERSION,
    FLAG_REPLY,
    HEADER,
    HEADER_SIZE,
    KNOWN_FLAGS,
    MAGIC,
    MAX_PAYLOAD,
    STATUS,
    Command,
    Frame,
    Header,
    ProtocolError,
    Rep,
    Req,
    Tail,
)

INLINE_MAX = 1 << 20  # largest copy carried inside a message (the direct path)

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
FEATURE_TEXTURES = 1 << 10  # TEX_CREATE/TEX_DESTROY: texture objects (libgdev.texture)
FEATURE_COOPERATIVE = 1 << 11  # GLAUNCH/MODULE_LAUNCH take LAUNCH_COOPERATIVE
FEATURE_VMM = 1 << 12  # GVM_*: reservations, allocation handles, maps, export/import
FEATURE_LIMITS = 1 << 13  # CTX_LIMIT: context limits kept by the daemon (the device heap)
FEATURE_IPC = 1 << 14  # GIPC_*: CUDA IPC memory and event handles (libgdev.ipchandle)
FEATURES = (FEATURE_STAGING | FEATURE_DMA_FD | FEATURE_INLINE | FEATURE_ASYNC | FEATURE_SHM
            | FEATURE_PRIORITY | FEATURE_MODULES | FEATURE_ERROR_MSG | FEATURE_GUEST
            | FEATURE_STREAMS | FEATURE_TEXTURES | FEATURE_COOPERATIVE | FEATURE_VMM
            | FEATURE_LIMITS | FEATURE_IPC)

# Where the host side of a copy lives (gdev_ioctl_dma's src_buf/dst_buf, without pointers).
HOST_INLINE = 0  # in the request tail (HtoD) or the reply tail (DtoH)
HOST_STAGING = 1  # the session's staging buffer, at host_offset
HOST_DMA = 2  # the pinned buffer buf_id, at host_offset
HOST_KINDS = (HOST_INLINE, HOST_STAGING, HOST_DMA)

GSYNC_TIMEOUT = 0x1  # gsync request flag: timeout_us is valid (else wait forever)
LAUNCH_COOPERATIVE = 0x1  # launch flag: every block resident at once (grid.sync())
LAUNCH_FLAGS = LAUNCH_COOPERATIVE
PRIO_CLEAR = 0x1  # SET_PRIORITY flag: drop the override (prio must be 0)
PRIO_GET = 0x2  # SET_PRIORITY flag: change nothing, only report (prio must be 0)
PRIO_FLAGS = PRIO_CLEAR | PRIO_GET
GUEST_CLEAR = 0x1  # SET_GUEST flag: drop the override (guest must be 0)
GUEST_GET = 0x2  # SET_GUEST flag: change nothing, only report (guest must be 0)
GUEST_FLAGS = GUEST_CLEAR | GUEST_GET
STREAM_NON_BLOCKING = 0x1  # STREAM_CREATE flag: no implicit order with the legacy stream 0
STREAM_FLAGS = STREAM_NON_BLOCKING
STREAM_SYNC_TIMEOUT = 0x1  # STREAM_SYNC flag: timeout_us is valid (else wait forever)
LIMIT_SET = 0x1  # CTX_LIMIT flag: set the limit to value (else value must be 0: only report)
LIMIT_FLAGS = LIMIT_SET

MSG_MAX = 1024  # longest error message (UTF-8 bytes) an error reply carries


def encode_header(command: int, request_id: int, payload_len: int, flags: int = 0) -> bytes:
    """The header of a message whose payload (struct + tail) is ``payload_len`` bytes."""
    if payload_len > MAX_PAYLOAD:
        raise ValueError(f"payload of {payload_len} bytes exceeds {MAX_PAYLOAD}")
    return HEADER.pack(MAGIC, ABI_VERSION, flags, command, payload_len, request_id, 0)


def encode(command: int, request_id: int, payload: bytes, flags: int = 0) -> bytes:
    """One whole message: header + payload."""
    return encode_header(command, request_id, len(payload), flags) + payload


def encode_request_head(cmd: Command[Req, Rep], request_id: int, req: Req,
                        tail_len: int = 0) -> bytes:
    """Header and argument struct of a request whose tail (sent separately) is ``tail_len``
    bytes long; ValueError for values out of range or a tail the command does not take."""
    lay = cmd.request
    if tail_len and not lay.tail:
        raise ValueError(f"{lay.name} takes no tail")
    plen = lay.struct.size + tail_len
    if plen > MAX_PAYLOAD:
        raise ValueError(f"payload of {plen} bytes exceeds {MAX_PAYLOAD}")
    head = (MAGIC, ABI_VERSION, 0, cmd.number, plen, request_id, 0)
    return lay.pack_message(lay.request_message, head, req)


def encode_request(name: str, request_id: int, tail: Tail = b"",
                   **fields: int | bytes) -> bytes:
    """The request of command ``name`` built from keyword fields, with an optional tail (for
    messages made by hand; a client passes typed structs to :func:`encode_request_head`)."""
    cmd = BY_NAME[name]
    head = encode_request_head(cmd, request_id, cmd.request.cls(**fields), len(tail))
    return head + bytes(tail) if len(tail) else head


def encode_reply(cmd: Command[Req, Rep], request_id: int, reply: Rep,
                 tail: Tail = b"") -> bytes:
    """A successful reply to ``cmd``: its output struct and tail (errors:
    :func:`encode_error`)."""
    lay = cmd.reply
    if len(tail) and not lay.tail:
        raise ValueError(f"{lay.name} takes no tail")
    plen = lay.reply_message.size - HEADER_SIZE + len(tail)
    if plen > MAX_PAYLOAD:
        raise ValueError(f"payload of {plen} bytes exceeds {MAX_PAYLOAD}")
    head = (MAGIC, ABI_VERSION, FLAG_REPLY, cmd.number, plen, request_id, 0, 0, 0)
    msg = lay.pack_message(lay.reply_message, head, reply)
    return b"".join((msg, tail)) if len(tail) else msg  # one copy of the tail


def parse_simple_reply(cmd: Command[Req, Rep], request_id: int,
                       data: bytes | memoryview) -> Rep | None:
    """Fast path for the common case: if ``data`` is exactly one successful reply to
    (``cmd``, ``request_id``) without a tail, its struct; otherwise None, and the caller
    takes the general path (:class:`ReceiveBuffer` and :func:`decode_reply`), which
    validates and reports everything else."""
    lay = cmd.reply
    whole = lay.reply_message
    if len(data) != whole.size:
        return None
    raw = whole.unpack_from(data)
    if raw[:9] != (MAGIC, ABI_VERSION, FLAG_REPLY, cmd.number, whole.size - HEADER_SIZE,
                   request_id, 0, 0, 0):
        return None
    return lay.from_raw(raw[9:])


class Request(NamedTuple):
    """A request taken by :func:`parse_simple_request`: command, request id, struct."""

    command: Command[Any, Any]
    request_id: int
    fields: tuple[object, ...]


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
    fields = lay.from_raw(raw[7:])
    return None if fields is None else Request(cmd, raw[5], fields)


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


def _check_header(h: Header, want_reply: bool) -> Command[Any, Any] | None:
    if h.version != ABI_VERSION:
        raise ProtocolError(_errno.EPROTONOSUPPORT, f"ABI version {h.version}")
    if h.reserved:
        raise ProtocolError(_errno.EINVAL, "nonzero reserved header field")
    if h.flags & ~KNOWN_FLAGS or bool(h.flags & FLAG_REPLY) != want_reply:
        raise ProtocolError(_errno.EINVAL, f"bad flags 0x{h.flags:x}")
    return BY_NUMBER.get(h.command)


def decode_request(frame: Frame) -> tuple[Command[Any, Any], tuple[object, ...], memoryview]:
    """Validate a request frame: (command, its request struct, tail), or ProtocolError with
    the errno to reply with."""
    cmd = _check_header(frame.header, want_reply=False)
    if cmd is None:
        raise ProtocolError(_errno.ENOTTY, f"unknown command 0x{frame.header.command:x}")
    fields, tail = cmd.request.unpack(frame.payload)
    return cmd, fields, tail


def decode_reply(frame: Frame) -> tuple[Command[Any, Any] | None, int, tuple[object, ...] | None,
                                       Tail]:
    """Validate a reply frame: (command, status, its reply struct or None, tail).  An error reply
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
