"""gdevd: the Gdev "kernel": emulated GPU hardware, the Gdev runtime and the FUSE daemon."""

__version__ = "0.1.0"
