"""Verbs for texture objects (not in Gdev): create and destroy a context's texture object.

A texture object is a validated descriptor in the context's
:class:`~gdevd.gpu.texture.TextureTable`, named by an opaque 64-bit handle that kernels
receive as a parameter; ``tex`` instructions look it up on every fetch and read its texels
through the context's page table (``gdevd/gpu/texture.py``, ``texsample.py``).
"""

from __future__ import annotations

import trio

from libgdev.messages import TexDesc

from .handle import Handle, check_handle
from .texdesc import validate


async def gtex_create(handle: Handle, desc: TexDesc) -> int:
    """Create a texture object of the context from ``desc`` (``libgdev.texture``); its
    handle (an opaque nonzero u64).

    Errors: EBADF; EINVAL (a bad field, named in the message); EFAULT/ENOENT (the texels'
    range is not inside one allocation of this context); ENOSPC (the context holds
    ``TEXTURES_PER_CONTEXT`` texture objects); the sticky error once a kernel of the
    context faulted.
    """
    check_handle(handle)
    await trio.lowlevel.checkpoint()
    handle.check_kernel_fault()
    tex = validate(TexDesc(*desc))
    handle.lookup(tex.addr, tex.span)
    return handle.textures.create(tex)


async def gtex_destroy(handle: Handle, tex: int) -> None:
    """Destroy texture object ``tex``; a kernel that presents it later faults.  Launches
    already running keep reading it until their next fetch.

    Errors: EBADF; EINVAL (no such texture object in this context).
    """
    check_handle(handle)
    await trio.lowlevel.checkpoint()
    handle.textures.destroy(tex)
