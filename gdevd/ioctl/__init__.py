"""The ioctl path: sessions, the socket server and the dispatch table (one handler per
command of :mod:`libgdev.abi`)."""
