"""Modules loaded by the runtime: a PTX image in, a function table out (cuModuleLoad's work).

``gmodule_load`` checks that the image is PTX text (or a linked-module image of several PTX
texts, ``libgdev/linkimage.py``, which the GPU's loader links into one module), parses, links
and lays it out (through
the GPU's module cache, so loading the same text twice parses it once), puts the code and
the data segment of its ``.global``/``.const`` variables (with their initialisers) in the
context's device memory (in pinned memory when the module has ``__managed__`` variables:
``gmodule_data``), and returns the :class:`libgdev.moduletable.ModuleTable` that the
client needs to launch and to answer attribute queries without parsing PTX.
``gmodule_launch`` launches function ``index`` of a loaded module; ``gmodule_unload`` frees
its memory once the work issued before is done.

Invariant: a handle's loaded modules live in :data:`_LOADED` under that handle only, so a
module id names nothing in another context (ENOENT).  Their memory is ordinary ``gmalloc``
(or ``gmalloc_dma``) memory of the context: ``gclose`` frees it with everything else.
"""

from __future__ import annotations

import errno
import itertools
import re
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import trio

from libgdev import linkimage
from libgdev.kernel import GdevKernel
from libgdev.moduletable import Function, Global, ModuleTable, Param

from ..errors import GdevError
from .api_copy import gmemcpy_to_device
from .api_exec import _check_kernel, _decode, launch_decoded
from .api_mem import gfree, gfree_dma, gmalloc, gmalloc_dma
from .handle import Handle
from .mm.memory import DmaBuffer
from .streams import LEGACY

SHARED_PER_BLOCK = 64 * 1024  # the engine's limit, static + dynamic
_BINARY_MAGICS = (b"\x7fELF", b"\x50\xed\x55\xba", b"\xba\x55\xed\x50")
_NO_BINARY = ("cubin and fatbin images carry machine code, which gdevd cannot run: build "
              "the module as PTX (nvcc -ptx, or embed PTX with -gencode arch=compute_XX,"
              "code=compute_XX)")


@dataclass(eq=False)
class LoadedModule:
    """A module in one context: its table, where its code lies, and the decoded module."""

    table: ModuleTable
    code_addr: int
    code_size: int
    decoded: Any
    data_buf: DmaBuffer | None = None  # the data segment when it is pinned memory


_LOADED: weakref.WeakKeyDictionary[Handle, dict[int, LoadedModule]] = \
    weakref.WeakKeyDictionary()
_IDS = itertools.count(1)


def ptx_text(image: bytes) -> str:
    """The PTX source in ``image`` (NUL-terminated or not); ENOEXEC saying why if it is not
    PTX text."""
    raw = bytes(image)
    if raw.startswith(_BINARY_MAGICS):
        raise GdevError(errno.ENOEXEC, _NO_BINARY)
    try:
        text = raw.decode("utf-8").rstrip("\0")
    except UnicodeDecodeError:
        raise GdevError(errno.ENOEXEC, "the image is neither PTX text nor UTF-8") from None
    if "\0" in text or ".version" not in text:
        raise GdevError(errno.ENOEXEC, "the image is not PTX text (no .version directive)")
    return text


def module_code(image: bytes) -> tuple[bytes, str | None]:
    """(the code to place and decode, its PTX text or None for a linked image) of a module
    image; ENOEXEC saying why for an image that is neither PTX text nor a well-formed
    linked image of PTX texts (re-encoded, so equal inputs make equal code)."""
    if not linkimage.is_linked(image):
        return ptx_text(image).encode("utf-8"), None
    try:
        units = linkimage.decode(image)
    except GdevError as exc:
        raise GdevError(errno.ENOEXEC, exc.detail) from None
    checked = []
    for name, text in units:
        try:
            checked.append((name, ptx_text(text.encode("utf-8"))))
        except GdevError as exc:
            raise GdevError(errno.ENOEXEC, f"linked input {name[:120]!r}: {exc.detail}") \
                from None
    return linkimage.encode(checked), None


def _versions(text: str) -> tuple[int, int]:
    ver = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", text, re.M)
    sm = re.search(r"^\s*\.target\s+sm_(\d+)", text, re.M)
    return (int(ver[1]) * 10 + int(ver[2]) if ver else 0, int(sm[1]) if sm else 0)


def _functions(decoded: Any, const_size: int) -> tuple[Function, ...]:
    out = []
    for info in decoded.kernels.values():
        params = tuple(Param(p.offset, p.size, p.align, getattr(p, "type", "b8"))
                       for p in info.params)
        out.append(Function(info.name, params, int(info.param_size), info.max_threads or 1024,
                            info.static_shared, info.local_size, len(info.regs), const_size,
                            SHARED_PER_BLOCK - info.static_shared, info.prints))
    return tuple(out)


def _table(decoded: Any, data_addr: int, text: str | None) -> ModuleTable:
    layout = decoded.data_layout()
    globals_ = tuple(Global(g.name, data_addr + layout.offsets[g.name], g.size, g.space)
                     for g in decoded.globals.values())
    const_size = sum(g.size for g in globals_ if g.space == "const")
    if text is None:    # linked: the header the linker chose
        text = f".version {decoded.ast.version}\n.target {','.join(decoded.ast.target)}"
    ptx_version, target_sm = _versions(text)
    return ModuleTable(next(_IDS), data_addr, layout.size, ptx_version, target_sm,
                       _functions(decoded, const_size), globals_)


async def _decoded(handle: Handle, code: bytes, name: str) -> Any:
    try:
        return await _decode(handle, code)
    except MemoryError:  # a declared data segment the daemon cannot even lay out
        raise GdevError(errno.ENOMEM, f"{name}: its data segment does not fit") from None
    except GdevError as exc:
        if exc.errno == errno.EINVAL and exc.detail.startswith("<ptx>:"):
            raise GdevError(errno.EINVAL, name + exc.detail[len("<ptx>"):]) from None
        raise


async def gmodule_load(handle: Handle, image: bytes, name: str = "<image>") -> ModuleTable:
    """Load the PTX module ``image`` into the context; its :class:`ModuleTable`.

    A linked-module image (several PTX texts) is linked into one module as ``nvlink``
    links relocatable device code (``gdevd/gpu/ptx/unitlink.py``).

    Errors: EBADF; ENOEXEC (not PTX text: a binary or junk image, with what to do);
    EINVAL (PTX the loader rejects, naming ``name`` or the linked input, the line and the
    construct; for a linked image also duplicate definitions and unresolved references,
    naming the symbol and the inputs); ENOMEM (the code or data segment does not fit the
    vGPU's share); the sticky error once a kernel of the context faulted.
    """
    handle.check_open()
    handle.check_kernel_fault()
    code, text = module_code(image)
    decoded = await _decoded(handle, code, name)
    code_addr = await gmalloc(handle, len(code))
    data_addr, data_buf = 0, None
    try:
        await gmemcpy_to_device(handle, code_addr, code, len(code))
        data_addr, data_buf = await _place_data(handle, decoded)
    except BaseException:
        await _free(handle, data_addr if data_buf is None else 0, code_addr)
        raise
    table = _table(decoded, data_addr, text)
    _LOADED.setdefault(handle, {})[table.module_id] = \
        LoadedModule(table, code_addr, len(code), decoded, data_buf)
    return table


def _has_managed(decoded: Any) -> bool:
    return any(getattr(v, "managed", False) for v in decoded.ast.globals.values())


async def _place_data(handle: Handle, decoded: Any) -> tuple[int, DmaBuffer | None]:
    """(address, pinned buffer or None) of the module's data segment, written with its
    initialisers.  A module with ``__managed__`` variables gets pinned memory, which the
    client maps at the same address (``gmodule_data``): the host and the kernels then use one
    copy, as CUDA's managed variables are.  Where the vGPU's pinned share is spent it gets
    device memory like any other module."""
    layout = decoded.data_layout()
    if not layout.size:
        return 0, None
    image = bytes(layout.image)
    if _has_managed(decoded):
        try:
            buf = await gmalloc_dma(handle, layout.size)
        except GdevError as exc:
            if exc.errno != errno.ENOMEM:
                raise
        else:
            buf.array[:len(image)] = np.frombuffer(image, np.uint8)
            return buf.va, buf
    addr = await gmalloc(handle, layout.size)
    try:
        await gmemcpy_to_device(handle, addr, image, len(image))
    except BaseException:
        await _free(handle, addr)
        raise
    return addr, None


async def gmodule_data(handle: Handle, module_id: int) -> DmaBuffer:
    """The pinned buffer holding module ``module_id``'s data segment (a module with
    ``__managed__`` variables), for the client to map at its GPU address.  Errors: EBADF;
    ENOENT (no such module, or its data segment is device memory: it has no managed variable,
    or no pinned memory was left when it loaded)."""
    mod = _loaded(handle, module_id)
    if mod.data_buf is None:
        why = ("no pinned memory was left when it loaded" if _has_managed(mod.decoded)
               else "it has no __managed__ variable")
        raise GdevError(errno.ENOENT, f"module {module_id}'s data segment is device memory "
                                      f"({why})")
    return mod.data_buf


async def _free(handle: Handle, *addrs: int) -> None:
    for addr in addrs:
        if addr:
            try:
                await gfree(handle, addr)
            except GdevError:
                if not handle.closed:
                    raise


def _loaded(handle: Handle, module_id: int) -> LoadedModule:
    handle.check_open()
    mod = _LOADED.get(handle, {}).get(module_id)
    if mod is None:
        raise GdevError(errno.ENOENT, f"no module {module_id} in context {handle.cid}")
    return mod


async def gmodule_unload(handle: Handle, module_id: int) -> None:
    """Unload module ``module_id``, freeing its code and data once the work issued before
    is done.  Errors: EBADF; ENOENT (no such module in this context)."""
    mod = _loaded(handle, module_id)
    del _LOADED[handle][module_id]
    if mod.data_buf is not None:
        await gfree_dma(handle, mod.data_buf)
    await _free(handle, 0 if mod.data_buf else mod.table.data_addr, mod.code_addr)


async def gmodule_launch(handle: Handle, module_id: int, index: int,
                         grid: tuple[int, int, int], block: tuple[int, int, int],
                         shared_dynamic: int, params: bytes | memoryview,
                         stream: int = LEGACY, cooperative: bool = False) -> int:
    """Launch function ``index`` of module ``module_id`` in ``stream`` (``cooperative``:
    every block resident at once, coop.py); its fence id (see ``glaunch``).

    The decoded module is the one the load cached: a launch neither reads nor hashes the
    code again.  Errors: as glaunch's, and ENOENT (no such module, or no function
    ``index``, naming the module's kernels)."""
    mod = _loaded(handle, module_id)
    functions = mod.table.functions
    if not 0 <= index < len(functions):
        names = ", ".join(f.name for f in functions) or "none"
        raise GdevError(errno.ENOENT, f"module {module_id} has no function {index} "
                                      f"(its kernels: {names})")
    kernel = GdevKernel(code_addr=mod.code_addr, code_size=mod.code_size,
                        data_addr=mod.table.data_addr, name=functions[index].name,
                        grid=grid, block=block, shared_dynamic=shared_dynamic, params=params,
                        cooperative=cooperative)
    _check_kernel(kernel)
    handle.check_fault()
    await trio.lowlevel.checkpoint()
    return await launch_decoded(handle, mod.decoded, kernel, stream)
