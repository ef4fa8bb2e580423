"""Loading a PTX module: parse, validate, lay out data, link and decode every kernel.

:func:`load_module` does all the work once; a :class:`Module` then only launches.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np

from . import devlib
from .calls import check_region, coalesce_linked
from .callstack import FrameInfo, frame_info
from .devrt import HEAP_NAMES, calls_devrt
from .errors import PtxError
from .linker import HEAP_CALLS, Linker, function_addresses
from .lower import lower
from .parser import parse
from .program import Block, build_blocks
from .ptxtypes import scalar, size_of
from .reserved import reserve
from .syntax import ModuleAst, Sym, VarDecl

MAX_SHARED = 64 * 1024


@dataclass(frozen=True)
class ParamInfo:
    """One kernel parameter: byte offset, size and alignment in the parameter buffer, and
    its PTX type (a scalar's, e.g. ``f32``; ``b8`` for arrays and vectors: raw bytes)."""

    name: str
    offset: int
    size: int
    align: int
    type: str = "b8"


@dataclass(frozen=True)
class GlobalInfo:
    """A module variable in ``.global`` or ``.const`` space with its initial bytes."""

    name: str
    space: str
    size: int
    align: int
    init: bytes


@dataclass(frozen=True)
class DataLayout:
    """All module variables packed into one aligned data segment."""

    offsets: dict[str, int]
    size: int
    image: bytes
    align: int = 256


@dataclass
class KernelInfo:
    """What the launcher needs to know about a kernel."""

    name: str
    params: list[ParamInfo]
    param_size: int
    static_shared: int
    local_size: int
    max_threads: int | None = None
    cluster: int = 1        # CTAs per cluster it requires (.reqnctapercluster); launches
    #                         here are grids of one-CTA clusters, so more is refused
    regs: dict[str, str] = field(default_factory=dict, repr=False)
    pvars: dict[str, int] = field(default_factory=dict, repr=False)
    shared_offsets: dict[str, int] = field(default_factory=dict, repr=False)
    dynamic_shared: list[str] = field(default_factory=list, repr=False)
    local_offsets: dict[str, int] = field(default_factory=dict, repr=False)
    blocks: list[Block] = field(default_factory=list, repr=False)
    prints: bool = False    # calls printf (builtin.vprintf): its host fetches the output
    heap: bool = False      # calls malloc/free: the runtime reserves the context's heap
    frames: FrameInfo | None = field(default=None, repr=False)   # recursion (callstack.py)
    launches: bool = False  # calls the device runtime (devrt.py): launched as a LaunchTree


def _align_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def _var_align(v: VarDecl) -> int:
    return max(v.align or size_of(v.type) * v.vec, 1)


def _image_of(v: VarDecl, name: str, funcs: dict[str, int]) -> bytes:
    """The initial bytes of ``v``; a symbol in its initializer must name a device function
    (``funcs``: their addresses), as nvcc's function-pointer tables do."""
    size = v.size
    if not v.init:
        return bytes(size)
    n_elems = size // size_of(v.type)
    if len(v.init) > n_elems:
        raise PtxError(v.line, v.name, "too many initializers", name)
    for x in v.init:
        if isinstance(x, Sym) and (x.name not in funcs or size_of(v.type) != 8):
            raise PtxError(v.line, x.name, "only device functions' addresses may initialize "
                                           "a 64-bit variable", name)
    vals = [scalar(funcs[x.name] if isinstance(x, Sym) else x, v.type) for x in v.init]
    data = b"".join(np.asarray(x).tobytes() for x in vals)
    return data + bytes(size - len(data))


class _Ctx:
    """Name lookup used while decoding one kernel's instructions."""

    def __init__(self, name: str, ast: ModuleAst, kernel, linked) -> None:
        self.module_name = name
        self.spaces: dict[str, str] = {}
        for g in ast.globals.values():
            self.spaces[g.name] = g.space
        for p in kernel.params:
            self.spaces[p.name] = "kparam"
        for v in linked.shared:
            self.spaces[v.name] = "shared"
        for v in linked.locals + (linked.frames.locals if linked.frames else []):
            self.spaces[v.name] = "local"
        for n in linked.pvars:
            self.spaces[n] = "param"
        for n in function_addresses(ast):
            self.spaces.setdefault(n, "func")

    def symbol_space(self, name: str) -> str | None:
        """State space of a variable name, or None if it names none."""
        return self.spaces.get(name)


class Module:
    """A loaded module: kernels, globals, and the data layout.  See :func:`load_module`."""

    def __init__(self, ast: ModuleAst, name: str, text: str = "") -> None:
        from .jit import JitState
        devlib.provide(ast)         # functions the driver provides (cudaGraphSetConditional)
        self.name = name
        self.ast = ast
        self.globals: dict[str, GlobalInfo] = {}
        self.function_addresses = function_addresses(ast)
        from .executor import WavePool
        self.wave_pool = WavePool()
        self._layout = self._build_layout()
        self.kernels: dict[str, KernelInfo] = {}
        self._links: dict = {}      # what the links of all its kernels share (linker.py)
        for fn in ast.functions.values():
            if fn.kind == "entry" and fn.defined:
                self.kernels[fn.name] = self._build_kernel(fn)
        for flag in ("prints", "heap"):         # its children may print or malloc: the host
            if any(getattr(k, flag) for k in self.kernels.values()):  # fetches, the heap is
                for k in self.kernels.values():                       # reserved
                    setattr(k, flag, getattr(k, flag) or k.launches)
        self.jit = JitState(self, text)

    def start_compile(self, wait: bool = False, owner: Hashable = None) -> None:
        """Compile the kernels to native code in the background (see :mod:`.jit`), the
        compiler's slots granted to ``owner`` (a tenant; jit/slots.py)."""
        self.jit.start(wait, owner=owner)

    def cancel_compile(self) -> None:
        """Stop a background compile; a later launch starts it again (:mod:`.jit`)."""
        self.jit.cancel()

    def data_layout(self) -> DataLayout:
        """Offsets of every ``.global``/``.const`` variable in one data segment."""
        return self._layout

    def _build_layout(self) -> DataLayout:
        offsets: dict[str, int] = {}
        image = bytearray()
        for v in self.ast.globals.values():
            if v.space not in ("global", "const") or v.extern:
                continue
            a = _var_align(v)
            off = _align_up(len(image), a)
            init = _image_of(v, self.name, self.function_addresses)
            image += bytes(off - len(image)) + init
            offsets[v.name] = off
            self.globals[v.name] = GlobalInfo(v.name, v.space, v.size, a, init)
        return DataLayout(offsets, len(image), bytes(image))

    def _build_kernel(self, fn) -> KernelInfo:
        params, off = [], 0
        for p in fn.params:
            a = _var_align(p)
            off = _align_up(off, a)
            scalar = p.count is None and p.vec == 1
            params.append(ParamInfo(p.name, off, p.size, a, p.type if scalar else "b8"))
            off += p.size
        linked = Linker(self.ast, self.name, self._links).link(fn)
        linked.code, linked.regs = coalesce_linked(linked)
        self._add_module_shared(linked)
        reserve(linked)
        info = KernelInfo(fn.name, params, off, 0, 0, regs=linked.regs, pvars=linked.pvars,
                          prints=any(getattr(ins, "opcode", "") == "builtin.vprintf"
                                     for ins in linked.code),
                          heap=any(getattr(ins, "opcode", "")[len("builtin."):]
                                   in HEAP_CALLS | HEAP_NAMES for ins in linked.code
                                   if getattr(ins, "opcode", "").startswith("builtin.")),
                          launches=any(calls_devrt(ins) for ins in linked.code))
        info.static_shared = self._layout_shared(linked, info)
        info.local_size = self._layout_local(linked, info)
        if info.static_shared > MAX_SHARED:
            raise PtxError(fn.line, fn.name, "static shared memory exceeds 64 KiB", self.name)
        if ".maxntid" in fn.directives or ".reqntid" in fn.directives:
            dims = fn.directives.get(".maxntid") or fn.directives[".reqntid"]
            info.max_threads = int(np.prod(dims))
        if fn.directives.get(".reqnctapercluster"):
            info.cluster = int(np.prod(fn.directives[".reqnctapercluster"]))
        info.blocks = build_blocks(linked.code, _Ctx(self.name, self.ast, fn, linked))
        if linked.frames is not None:
            info.frames = frame_info(linked, info, info.blocks, linked.frames.first)
            check_region(info.blocks, info.frames.start, self.name, fn.name)
        return info

    def _add_module_shared(self, linked) -> None:
        """Module-scope .shared variables referenced by the kernel's code join its layout."""
        names = {v.name for v in linked.shared}
        used = set()
        for ins in linked.code:
            for a in getattr(ins, "args", ()):
                used.update(_names(a))
        for g in self.ast.globals.values():
            if g.space == "shared" and g.name in used and g.name not in names:
                linked.shared.append(g)

    @staticmethod
    def _layout_shared(linked, info: KernelInfo) -> int:
        end = 0
        for v in linked.shared:
            if v.extern or v.count == 0:
                info.dynamic_shared.append(v.name)
                continue
            end = _align_up(end, _var_align(v))
            info.shared_offsets[v.name] = end
            end += v.size
        return end

    @staticmethod
    def _layout_local(linked, info: KernelInfo) -> int:
        end = 0
        for v in linked.locals:
            end = _align_up(end, _var_align(v))
            info.local_offsets[v.name] = end
            end += v.size
        return end

    def launch(self, kernel_name: str, grid, block, params: bytes, mmu, data_base: int,
               shared_dynamic: int = 0, watchdog: float | None = None, textures=None,
               grid_workspace: int = 0, heap=None, device_runtime=None):
        """Prepare a launch of ``kernel_name``; see :class:`executor.Launch` (``textures``:
        the context's :class:`~gdevd.gpu.texture.TextureTable`, for ``tex``;
        ``grid_workspace``: nonzero for a cooperative launch, its workspace, coop.py;
        ``heap``: the context's :class:`~gdevd.gpu.heap.HeapAllocator`, for malloc/free).
        A kernel that calls the device runtime gets a :class:`~.devlaunch.LaunchTree` whose
        parameter buffers are ``device_runtime``: (address, slot size, slots) of memory of
        the launching context (None: its device launches fail), see :meth:`arena_slot`."""
        from .devlaunch import LaunchTree, check_arena
        check_arena(device_runtime)
        launch = self.engine_launch(kernel_name, grid, block, params, mmu, data_base,
                                    shared_dynamic, watchdog, textures, grid_workspace, heap)
        if not launch.info.launches:
            return launch
        return LaunchTree(self, launch, device_runtime)

    def arena_slot(self) -> int:
        """The parameter-buffer slot a device launch of this module needs: its largest
        kernel parameter list, rounded to the largest parameter alignment (at least 16)."""
        align = max([16] + [p.align for k in self.kernels.values() for p in k.params])
        return max([align] + [_align_up(k.param_size, align) for k in self.kernels.values()])

    def engine_launch(self, kernel_name: str, grid, block, params: bytes, mmu, data_base: int,
                      shared_dynamic: int = 0, watchdog: float | None = None, textures=None,
                      grid_workspace: int = 0, heap=None):
        """One grid of ``kernel_name`` on the engine its code is ready for (compiled if it
        is, else interpreted): :meth:`launch` without the device runtime's tree."""
        from .executor import Launch
        if kernel_name not in self.kernels:
            import errno

            from gdevd.errors import GdevError
            raise GdevError(errno.EINVAL, f"no kernel {kernel_name!r} in {self.name}")
        native = self.jit.runnable(kernel_name)
        if native is not None:
            from .jit.launch import JitLaunch
            return JitLaunch(self, self.kernels[kernel_name], *native, grid,
                             block, params, mmu, data_base, shared_dynamic, watchdog,
                             textures=textures, grid_workspace=grid_workspace, heap=heap)
        return Launch(self, self.kernels[kernel_name], grid, block, params, mmu, data_base,
                      shared_dynamic, watchdog, textures, grid_workspace, heap=heap)


def _names(a) -> set[str]:
    from .syntax import Addr, Group, Pair, Sym, Vec
    if isinstance(a, Sym):
        return {a.name}
    if isinstance(a, Addr) and isinstance(a.base, Sym):
        return {a.base.name}
    if isinstance(a, Vec | Group):
        return set().union(*(_names(x) for x in a.items)) if a.items else set()
    if isinstance(a, Pair):
        return _names(a.first) | _names(a.second)
    return set()


def load_module(text: str, name: str = "<ptx>") -> Module:
    """Parse, validate and pre-decode a PTX module; raises PtxError (EINVAL) if rejected."""
    ast = lower(parse(text, name), name)
    return Module(ast, name, text)
