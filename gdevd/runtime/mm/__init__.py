"""The memory manager: VRAM extents, memory objects, swap areas, residency and shared segments.

``allocator`` (first-fit extents), ``memory`` (device and pinned blocks, their mappings),
``swaparea`` (where evicted pages go), ``swap`` (victims, eviction, swap-in, migration),
``residency`` (pinning a range resident around an operation) and ``shm`` (the System V
segment table).  The package sits below the rest of the runtime: its modules import each
other, the runtime's ``defaults`` and ``constants``, errors and the hardware, never the verbs,
handles or the system (those appear as types only); docs/memory.md has the theory.
"""
