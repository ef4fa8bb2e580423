"""The test harness itself: parameter packing and the backends' memory."""

import struct

import numpy as np
import pytest

from gdevd.errors import MmuFault

from .conftest import BACKENDS
from .cpu_backend import kernel_signatures, translate
from .harness import EngineDevice, pack_params


def test_pack_params_sizes_signs_floats_and_structs():
    layout = [(0, 8), (8, 4), (12, 4), (16, 8), (24, 12)]
    buf = pack_params([0x1122334455, -1, 1.5, 2.25, b"\1" * 12], layout)
    assert buf[:8] == (0x1122334455).to_bytes(8, "little")
    assert buf[8:12] == b"\xff" * 4
    assert struct.unpack("<f", buf[12:16])[0] == 1.5
    assert struct.unpack("<d", buf[16:24])[0] == 2.25
    assert buf[24:] == b"\1" * 12


def test_pack_params_rejects_wrong_counts_and_struct_sizes():
    with pytest.raises(TypeError):
        pack_params([1], [(0, 4), (4, 4)])
    with pytest.raises(ValueError):
        pack_params([b"abc"], [(0, 4)])


@pytest.mark.parametrize("backend", sorted(BACKENDS) + ["engine-memory"])
def test_memory_round_trip(backend):
    dev = EngineDevice() if backend == "engine-memory" else BACKENDS[backend]()
    a = np.arange(3000, dtype=np.int32) * -7
    pa, pz = dev.upload(a), dev.zeros(100)
    np.testing.assert_array_equal(dev.download(pa, np.int32, a.shape), a)
    assert dev.read(pz, 100) == bytes(100)
    dev.write(pz + 10, b"xyz")
    assert dev.read(pz + 9, 5) == b"\0xyz\0"


def test_engine_buffers_are_fenced_by_unmapped_pages():
    dev = EngineDevice()
    p = dev.upload(np.zeros(1024, np.uint32))
    with pytest.raises(MmuFault):
        dev.read(p + 4096, 4)


def test_cpu_translation_of_signatures_and_dynamic_shared():
    src = 'extern "C" __global__ void k(const float *a, struct s v, unsigned int n)\n' \
          "{ extern __shared__ unsigned int buf[]; }"
    assert kernel_signatures(src) == {
        "k": [("const float *", "a"), ("struct s", "v"), ("unsigned int", "n")]}
    assert "unsigned int *buf = (unsigned int *)shim_dyn_smem;" in translate(src)
