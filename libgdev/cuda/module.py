"""Modules (PTX) and their functions and globals (cuModule*).

Loading sends the image to the layer below (``gmodule_load``: gdevd, or the runtime in
process), which checks and parses it, places the code and the data segment of the module's
``.global``/``.const`` variables in the context's memory and returns the function table
(:class:`libgdev.moduletable.ModuleTable`): each kernel's parameter layout and attributes,
each global's device address.  Nothing here parses PTX.  An image that is not PTX text
(cubin, fatbin, junk) is CUDA_ERROR_INVALID_IMAGE (ENOEXEC below); PTX the loader rejects is
CUDA_ERROR_INVALID_PTX (EINVAL below); both keep the loader's message.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from typing import Any

from libgdev.moduletable import ModuleTable

from . import nvcc
from .core import DriverCore
from .errors import CUresult, api, fail, module_api


def image_bytes(image: Any) -> bytes:
    """The bytes of ``image`` (str as UTF-8, or any bytes-like), else INVALID_VALUE."""
    if isinstance(image, str):
        return image.encode("utf-8")
    try:
        return bytes(memoryview(image))
    except TypeError:
        raise fail(CUresult.CUDA_ERROR_INVALID_VALUE, f"image {type(image)}") from None


class Module:
    """A CUmodule: a module loaded into one context, known by its function table."""

    def __init__(self, ctx: Any, table: ModuleTable, name: str) -> None:
        self.ctx = ctx
        self.table = table
        self.name = name
        self.functions: dict[str, Any] = {}
        self.unloaded = False

    @property
    def versions(self) -> tuple[int, int]:
        """(PTX ISA version * 10, target SM)."""
        return self.table.ptx_version, self.table.target_sm

    def release(self) -> None:
        """Unload from the context (idempotent); the layer below drains the work first."""
        if not self.unloaded:
            self.unloaded = True
            self.ctx.backend.gmodule_unload(self.ctx.handle, self.table.module_id)

    def __repr__(self) -> str:
        return f"<CUmodule {self.name!r}{' unloaded' if self.unloaded else ''}>"


def demangle(names: list[str]) -> list[str]:
    """C++ names as source shows them (``_Z4noopv`` -> ``noop()``), by ``c++filt`` when it
    is installed; the names as they are otherwise."""
    if not any(n.startswith("_Z") for n in names) or shutil.which("c++filt") is None:
        return list(names)
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True,
                             text=True, timeout=10, check=True).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return list(names)
    return out if len(out) == len(names) else list(names)


def _no_kernel(mod: Module, name: str) -> str:
    names = [f.name for f in mod.table.functions]
    shown = [n if d == n else f"{n} ({d})" for n, d in zip(names, demangle(names), strict=True)]
    near = [s for s in shown if f" ({name}(" in s]
    hint = f"; did you mean {near[0].split()[0]}?" if near else ""
    return f"no kernel {name!r} in {mod!r}; its kernels: {', '.join(shown) or 'none'}{hint}"


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
        raw = image_bytes(image)
        with ctx.lock:
            table = ctx.backend.gmodule_load(ctx.handle, raw, name)
            mod = Module(ctx, table, name)
            ctx.modules.append(mod)
        return mod

    @module_api
    def cuModuleLoad(self, fname: str | os.PathLike[str]) -> Module:
        """Load a module from the file ``fname``: PTX, whatever the file is called, or CUDA
        C++ source (``.cu``), compiled to PTX with nvcc and cached (:mod:`.nvcc`)."""
        self._current()
        try:
            with open(fname, "rb") as f:
                image = f.read()
        except OSError as exc:
            result = (CUresult.CUDA_ERROR_FILE_NOT_FOUND if exc.errno in (errno.ENOENT,
                      errno.ENOTDIR, errno.EISDIR) else CUresult.CUDA_ERROR_OPERATING_SYSTEM)
            raise fail(result, str(exc)) from exc
        if os.fspath(fname).endswith(nvcc.SOURCE_SUFFIXES):
            image = nvcc.compile_source(os.fspath(fname), image)
        return self._load(image, os.fspath(fname))

    @module_api
    def cuModuleLoadData(self, image: Any) -> Module:
        """Load a PTX module from memory (str or bytes, optionally NUL-terminated)."""
        return self._load(image, "<image>")

    @module_api
    def cuModuleLoadDataEx(self, image: Any, options: Any = None) -> Module:
        """cuModuleLoadData; JIT options are accepted and ignored (PTX runs as is)."""
        return self._load(image, "<image>")

    @api
    def cuModuleUnload(self, hmod: Module) -> None:
        """Unload a module, freeing its code and data once the work issued before is done."""
        mod = self._module(hmod)
        with mod.ctx.lock:
            mod.ctx.modules.remove(mod)
            mod.release()

    @api
    def cuModuleGetFunction(self, hmod: Module, name: str) -> Any:
        """The CUfunction for the kernel ``name`` (CUDA_ERROR_NOT_FOUND if absent)."""
        from .launch import Function

        mod = self._module(hmod)
        fn = mod.functions.get(name)
        if fn is None:
            found = mod.table.function(name)
            if found is None:
                raise fail(CUresult.CUDA_ERROR_NOT_FOUND, _no_kernel(mod, name))
            fn = mod.functions[name] = Function(mod, *found)
        return fn

    @api
    def cuModuleGetGlobal(self, hmod: Module, name: str) -> tuple[int, int]:
        """(CUdeviceptr, size) of the module variable ``name`` (NOT_FOUND if absent)."""
        g = self._module(hmod).table.global_(name)
        if g is None:
            raise fail(CUresult.CUDA_ERROR_NOT_FOUND, f"no global {name!r} in {hmod!r}")
        return g.addr, g.size
