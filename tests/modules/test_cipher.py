"""The GPU cipher path (kernels/aes.ptx through kcuda) byte for byte against ``cryptography``:
the IEEE 1619 XTS-AES-256 vector and random data, in 512-byte units and 4 KiB extents."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kcuda
from gdevd.modules.ecryptfs.cipher import CipherPaths, CpuCipher, GpuCipher, tweaks
from gdevd.modules.ecryptfs.files import EncryptedFile
from gdevd.modules.ecryptfs.keys import MountKey
from tests.kernels import reference_aes as ref
from tests.kernels.test_aes import V10_CT, V10_KEY, V10_PT


@pytest.fixture(scope="module")
def gpu(kcuda_system):
    g = GpuCipher(kcuda, 1)
    yield g
    g.close()
    kcuda_system.fsck()


def test_ieee1619_vector_10(gpu) -> None:
    tw = (0xFF).to_bytes(16, "little")
    assert gpu.xts(V10_KEY, tw, V10_PT, 512) == V10_CT
    assert gpu.xts(V10_KEY, tw, V10_CT, 512, decrypt=True) == V10_PT


@pytest.mark.parametrize("unit,nunits", [(16, 3), (512, 4), (4096, 2)])
def test_random_units_match_cryptography(gpu, unit: int, nunits: int) -> None:
    key = os.urandom(64)
    tw = [os.urandom(16) for _ in range(nunits)]
    data = os.urandom(unit * nunits)
    ct = gpu.xts(key, b"".join(tw), data, unit)
    assert ct == ref.xts(key, tw, data, unit)
    assert gpu.xts(key, b"".join(tw), ct, unit, decrypt=True) == data


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.integers(0, 2**40), count=st.integers(1, 3), seed=st.binary(min_size=8))
def test_extents_equal_cpu_path(gpu, first: int, count: int, seed: bytes) -> None:
    rng = np.random.default_rng(list(seed))
    key, data = rng.bytes(64), rng.bytes(4096 * count)
    cpu = CpuCipher()
    ct = gpu.encrypt(key, first, data)
    assert ct == cpu.encrypt(key, first, data)
    assert gpu.decrypt(key, first, ct) == data == cpu.decrypt(key, first, ct)


def test_tweaks_are_little_endian_extent_numbers() -> None:
    t = tweaks(0x0102, 2).tobytes()
    assert t[:16] == (0x0102).to_bytes(16, "little") and t[16:] == (0x0103).to_bytes(16, "little")


def test_key_schedules_are_cached_and_evicted(gpu) -> None:
    keys = [os.urandom(64) for _ in range(20)]  # more than KEY_SLOTS
    data = os.urandom(4096)
    for k in keys:
        assert gpu.encrypt(k, 7, data) == CpuCipher().encrypt(k, 7, data)
    assert len(gpu._slots) <= 16


def test_bad_xts_arguments_are_refused(gpu) -> None:
    with pytest.raises(ValueError):
        gpu.xts(os.urandom(32), bytes(16), bytes(512), 512)
    with pytest.raises(ValueError):
        gpu.xts(os.urandom(64), bytes(16), bytes(500), 500)


class _Fake:
    name = "gpu"

    def __init__(self) -> None:
        self.calls = 0

    def encrypt(self, key: bytes, first: int, data: bytes) -> bytes:
        self.calls += 1
        return CpuCipher().encrypt(key, first, data)

    decrypt = encrypt

    def close(self) -> None:
        self.calls = -1


def test_paths_choose_by_threshold_and_count() -> None:
    big = _Fake()
    paths = CipherPaths(big, threshold=8192)
    key = os.urandom(64)
    paths.encrypt(key, 0, bytes(4096))
    assert (paths.last, big.calls) == ("cpu", 0)
    paths.encrypt(key, 0, bytes(8192))
    assert (paths.last, big.calls) == ("gpu", 1)
    paths.threshold = 0
    paths.decrypt(key, 0, bytes(4096))
    assert paths.requests == {"cpu": 1, "gpu": 2} and paths.nbytes["gpu"] == 12288
    paths.close()
    assert big.calls == -1
    assert CipherPaths(None, 0).pick(1 << 20).name == "cpu"


def test_a_file_written_on_the_gpu_path_is_the_cpu_paths_file(gpu, tmp_path) -> None:
    """Same ciphertext and same tags: the lower file the GPU path writes is byte for byte the
    one the CPU path writes for the same header, and the CPU path reads it back."""
    mk = MountKey(os.urandom(32))
    data = os.urandom(5 * 4096 + 100)
    path = str(tmp_path / "f")
    f = EncryptedFile.create(path, 0o600, mk, CipherPaths(gpu, 0))
    f.write(0, data)
    f.close()
    with open(path, "rb") as fh:
        by_gpu = fh.read()
    g = EncryptedFile.open(path, mk, CpuCipher())
    assert g.read(0, len(data)) == data
    g.write(0, data)
    g.close()
    with open(path, "rb") as fh:
        assert fh.read() == by_gpu
