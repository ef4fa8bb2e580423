"""The compute engine's ISA: PTX as emitted by ``nvcc -ptx``, loaded and executed (SIMT)."""
