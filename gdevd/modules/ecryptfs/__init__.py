"""ecryptfs: a stacked encrypted file system whose AES runs on the GPU through ``kcuda``.

Split by concept: :mod:`.keys` (passphrase, mount record, wrapped per-file keys),
:mod:`.extent` (the lower file format, header and per-extent HMAC), :mod:`.cipher` (CPU,
GPU-in-daemon and the path choice), :mod:`.helper` (the KGPU-style user-space helper),
:mod:`.files` (reads and writes at any offset), :mod:`.fs` (the FUSE subtree) and
:mod:`.module` (options, life cycle, /proc values).  See docs/modules.md.
"""

from .module import EcryptfsModule

__all__ = ["EcryptfsModule"]
