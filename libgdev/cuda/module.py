"""Modules (PTX) and their functions and globals (cuModule*).

Loading validates and lays out the PTX with the PTX loader (``gdevd.gpu.ptx.load_module``), then
puts the module where Gdev's launch descriptor expects it, in the context's device memory: the
code (the PTX text, uploaded verbatim: the compute engine fetches and decodes it, caching by
content) and the data segment of the module's ``.global``/``.const`` variables with their
initialisers (``mod.data_layout().image``).  A global's CUdeviceptr is the segment's address
plus the variable's offset in the layout.  Images that are not PTX text (cubin, fatbin, binary
junk) are CUDA_ERROR_INVALID_IMAGE; PTX the loader rejects is CUDA_ERROR_INVALID_PTX.
"""

from __future__ import annotations

import errno
import os
import re
from typing import Any

from .core import DriverCore
from .errors import CUresult, api, fail

_BINARY_MAGICS = (b"\x7fELF", b"\x50\xed\x55\xba", b"\xba\x55\xed\x50")


def ptx_text(image: Any) -> str:
    """The PTX source in ``image`` (str, bytes-like, NUL-terminated or not), or INVALID_IMAGE."""
    if isinstance(image, str):
        text = image
    else:
        try:
            raw = bytes(memoryview(image))
        except TypeError:
            raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"image {type(image)}") from None
        if raw.startswith(_BINARY_MAGICS):
            raise fail(CUresult.CUDA_ERROR_INVALID_IMAGE, "binary images are not supported")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise fail(CUresult.CUDA_ERROR_INVALID_IMAGE, "image is not PTX text") from None
    text = text.rstrip("\0")
    if "\0" in text or ".version" not in text:
        raise fail(CUresult.CUDA_ERROR_INVALID_IMAGE, "image is not PTX text")
    return text


def ptx_versions(text: str) -> tuple[int, int]:
    """(PTX ISA version * 10, target SM) from the ``.version`` and ``.target`` directives."""
    ver = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", text, re.M)
    sm = re.search(r"^\s*\.target\s+sm_(\d+)", text, re.M)
    return (int(ver[1]) * 10 + int(ver[2]) if ver else 0, int(sm[1]) if sm else 0)


def _load_ptx(text: str, name: str) -> Any:
    from gdevd.gpu.ptx import load_module  # the loader is pure Python; libgdev uses it too

    return load_module(text, name)


def _layout_offset(layout: Any, name: str) -> int:
    offsets = getattr(layout, "offsets", None)
    if offsets is None:
        raise fail(CUresult.CUDA_ERROR_NOT_FOUND, name)
    return int(offsets[name])


class Module:
    """A CUmodule: a loaded PTX module with its code and data in one context's memory."""

    def __init__(self, ctx: Any, ptx: Any, name: str) -> None:
        self.ctx = ctx
        self.ptx = ptx
        self.name = name
        self.code_addr = 0
        self.code_size = 0
        self.data_addr = 0
        self.layout: Any = None
        self.functions: dict[str, Any] = {}
        self.unloaded = False
        self.versions = (0, 0)  # (PTX ISA version * 10, target SM), set by upload

    def upload(self, text: str) -> None:
        """Allocate and fill the code and data segments; frees what it got on failure."""
        be, h = self.ctx.backend, self.ctx.handle
        code = text.encode("utf-8")
        self.versions = ptx_versions(text)
        try:
            self.code_addr = int(be.gmalloc(h, len(code)))
            self.code_size = len(code)
            be.gmemcpy_to_device(h, self.code_addr, code, len(code))
            self.layout = self.ptx.data_layout()
            if self.layout.size:
                self.data_addr = int(be.gmalloc(h, self.layout.size))
                image = bytes(self.layout.image)
                be.gmemcpy_to_device(h, self.data_addr, image, len(image))
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        """Free the code and data segments (idempotent)."""
        be, h = self.ctx.backend, self.ctx.handle
        for attr in ("data_addr", "code_addr"):
            addr = getattr(self, attr)
            if addr:
                setattr(self, attr, 0)
                be.gfree(h, addr)

    def __repr__(self) -> str:
        return f"<CUmodule {self.name!r}{' unloaded' if self.unloaded else ''}>"


class ModuleAPI(DriverCore):
    """cuModule* entry points (mixed into the driver)."""

    def _module(self, hmod: Any) -> Module:
        ctx = self._current()
        if not isinstance(hmod, Module) or hmod.unloaded:
            raise fail(CUresult.CUDA_ERROR_INVALID_HANDLE, f"bad module {hmod!r}")
        if hmod.ctx is not ctx:
            raise fail(CUresult.CUDA_ERROR_INVALID_CONTEXT, f"{hmod!r} is of another context")
        return hmod

    def _load(self, image: Any, name: str) -> Module:
        ctx = self._current()
        text = ptx_text(image)
        mod = Module(ctx, _load_ptx(text, name), name)
        mod.upload(text)
        ctx.modules.append(mod)
        return mod

    @api
    def cuModuleLoad(self, fname: str | os.PathLike[str]) -> Module:
        """Load a PTX module from the file ``fname``."""
        self._current()
        try:
            with open(fname, "rb") as f:
                image = f.read()
        except OSError as exc:
            result = (CUresult.CUDA_ERROR_FILE_NOT_FOUND if exc.errno in (errno.ENOENT,
                      errno.ENOTDIR, errno.EISDIR) else CUresult.CUDA_ERROR_OPERATING_SYSTEM)
            raise fail(result, str(exc)) from exc
        return self._load(image, os.fspath(fname))

    @api
    def cuModuleLoadData(self, image: Any) -> Module:
        """Load a PTX module from memory (str or bytes, optionally NUL-terminated)."""
        return self._load(image, "<image>")

    @api
    def cuModuleLoadDataEx(self, image: Any, options: Any = None) -> Module:
        """cuModuleLoadData; JIT options are accepted and ignored (PTX runs as is)."""
        return self._load(image, "<image>")

    @api
    def cuModuleUnload(self, hmod: Module) -> None:
        """Unload a module, freeing its code and data once the work issued before is done."""
        mod = self._module(hmod)
        with mod.ctx.lock:
            mod.unloaded = True
            mod.ctx.modules.remove(mod)
            mod.release()  # gfree drains the handle: no launch still reads the code

    @api
    def cuModuleGetFunction(self, hmod: Module, name: str) -> Any:
        """The CUfunction for the kernel ``name`` (CUDA_ERROR_NOT_FOUND if absent)."""
        from .launch import Function

        mod = self._module(hmod)
        fn = mod.functions.get(name)
        if fn is None:
            info = mod.ptx.kernels.get(name)
            if info is None:
                raise fail(CUresult.CUDA_ERROR_NOT_FOUND, f"no kernel {name!r} in {mod!r}")
            fn = mod.functions[name] = Function(mod, info)
        return fn

    @api
    def cuModuleGetGlobal(self, hmod: Module, name: str) -> tuple[int, int]:
        """(CUdeviceptr, size) of the module variable ``name`` (NOT_FOUND if absent)."""
        mod = self._module(hmod)
        info = mod.ptx.globals.get(name)
        if info is None:
            raise fail(CUresult.CUDA_ERROR_NOT_FOUND, f"no global {name!r} in {mod!r}")
        return mod.data_addr + _layout_offset(mod.layout, name), int(info.size)
