"""AES-256 and AES-256-XTS kernels (kernels/aes.cu) byte for byte against FIPS-197, the IEEE
1619 XTS vectors and the ``cryptography`` package, on partial and multi-block grids."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from . import reference_aes as ref
from .conftest import BACKENDS
from .harness import cdiv

FIPS197_KEY = bytes(range(32))
FIPS197_PT = bytes.fromhex("00112233445566778899aabbccddeeff")
FIPS197_CT = bytes.fromhex("8ea2b7ca516745bfeafc49904b496089")  # FIPS-197 appendix C.3

# IEEE 1619-2007 annex B, vector 10: XTS-AES-256, data unit 0xff of 512 bytes
V10_KEY = bytes.fromhex("27182818284590452353602874713526624977572470936999595749669676273"
                        "141592653589793238462643383279502884197169399375105820974944592")
V10_PT = bytes(range(256)) * 2
V10_CT = bytes.fromhex(
    "1c3b3a102f770386e4836c99e370cf9bea00803f5e482357a4ae12d414a3e63b"
    "5d31e276f8fe4a8d66b317f9ac683f44680a86ac35adfc3345befecb4bb188fd"
    "5776926c49a3095eb108fd1098baec70aaa66999a72a82f27d848b21d4a741b0"
    "c5cd4d5fff9dac89aeba122961d03a757123e9870f8acf1000020887891429ca"
    "2a3e7a7d7df7b10355165c8b9a6d0a7de8b062c4500dc4cd120c0f7418dae3d0"
    "b5781c34803fa75421c790dfe1de1834f280d7667b327f6c8cd7557e12ac3a0f"
    "93ec05c52e0493ef31a12d3d9260f79a289d6a379bc70c50841473d1a8cc81ec"
    "583e9645e07b8d9670655ba5bbcfecc6dc3966380ad8fecb17b6ba02469a020a"
    "84e18e8f84252070c13e9f1f289be54fbc481457778f616015e1327a02b140f1"
    "505eb309326d68378f8374595c849d84f4c333ec4423885143cb47bd71c5edae"
    "9be69a2ffeceb1bec9de244fbe15992b11b77c040f12bd8f6a975a44a0f90c29"
    "a9abc3d4d893927284c58754cce294529f8614dcd2aba991925fedc4ae74ffac"
    "6e333b93eb4aff0479da9a410e4450e0dd7ae4c6e2910900575da401fc07059f"
    "645e8b7e9bfdef33943054ff84011493c27b3429eaedb4ed5376441a77ed4385"
    "1ad77f16f541dfd269d50d6a5f14fb0aab1cbb4c1550be97f7ab4066193c4caa"
    "773dad38014bd2092fa755c824bb5e54c4f36ffda9fcea70b9c6e693e148c151"
)


def _expand(dev, keys: bytes):
    """Run aes256_expand_keys on 32-byte keys; return (rk_enc, rk_dec) device pointers."""
    nkeys = len(keys) // 32
    enc, dec = dev.zeros(240 * nkeys), dev.zeros(240 * nkeys)
    dev.launch("aes", "aes256_expand_keys", cdiv(nkeys, 32), 32,
               [dev.upload(np.frombuffer(keys, np.uint8)), enc, dec, nkeys])
    return enc, dec


def _crypt(dev, kernel, data: bytes, keys, extra=(), block=128) -> bytes:
    """Run an AES kernel (in, out, *keys, nblocks, *extra) over ``data``; return the output."""
    nblocks = len(data) // 16
    pin, pout = dev.upload(np.frombuffer(data, np.uint8)), dev.zeros(len(data))
    dev.launch("aes", kernel, cdiv(nblocks, block), block, [pin, pout, *keys, nblocks, *extra])
    return dev.read(pout, len(data))


@pytest.mark.parametrize("nkeys", [1, 3, 33])
def test_key_expansion_matches_fips197(dev, rng, nkeys):
    keys = rng.bytes(32 * nkeys)
    enc, dec = _expand(dev, keys)
    got_enc = dev.download(enc, np.uint32, (nkeys, 60))
    got_dec = dev.download(dec, np.uint32, (nkeys, 60))
    for k in range(nkeys):
        key = keys[32 * k:32 * k + 32]
        assert got_enc[k].tolist() == ref.expand_key_enc(key)
        assert got_dec[k].tolist() == ref.expand_key_dec(key)


def test_fips197_known_answer(dev):
    enc, dec = _expand(dev, FIPS197_KEY)
    assert _crypt(dev, "aes256_encrypt_ecb", FIPS197_PT, [enc]) == FIPS197_CT
    assert _crypt(dev, "aes256_decrypt_ecb", FIPS197_CT, [dec]) == FIPS197_PT


@pytest.mark.parametrize("nblocks,block", [(1, 32), (100, 64), (257, 128), (1000, 256)])
def test_ecb_matches_cryptography(dev, rng, nblocks, block):
    key, data = rng.bytes(32), rng.bytes(16 * nblocks)
    enc, dec = _expand(dev, key)
    ct = _crypt(dev, "aes256_encrypt_ecb", data, [enc], block=block)
    assert ct == ref.ecb(key, data)
    assert _crypt(dev, "aes256_decrypt_ecb", ct, [dec], block=block) == data


def _xts(dev, key64, tweaks, data, unit, decrypt=False, block=128):
    enc, dec = _expand(dev, key64)
    rk1 = dec if decrypt else enc
    ptw = dev.upload(np.frombuffer(b"".join(tweaks), np.uint8))
    kernel = "aes256_xts_decrypt" if decrypt else "aes256_xts_encrypt"
    # the second key's schedules follow the first's: 60 words = 240 bytes further
    return _crypt(dev, kernel, data, [rk1, enc + 240, ptw], [unit // 16], block=block)


def test_ieee1619_vector_10(dev):
    tweak = [(0xFF).to_bytes(16, "little")]
    assert _xts(dev, V10_KEY, tweak, V10_PT, 512) == V10_CT
    assert _xts(dev, V10_KEY, tweak, V10_CT, 512, decrypt=True) == V10_PT


@pytest.mark.parametrize("unit,nunits,block", [
    (16, 1, 32), (32, 7, 64), (48, 50, 64), (512, 3, 128), (512, 5, 1024), (4096, 2, 256),
    (4096, 1, 96),
])
def test_xts_matches_cryptography(dev, rng, unit, nunits, block):
    key64 = rng.bytes(64)
    tweaks = [int(s).to_bytes(16, "little") for s in rng.integers(0, 2**62, size=nunits)]
    tweaks[0] = rng.bytes(16)  # a full 128-bit tweak, high bits set
    data = rng.bytes(unit * nunits)
    ct = _xts(dev, key64, tweaks, data, unit, block=block)
    assert ct == ref.xts(key64, tweaks, data, unit)
    assert _xts(dev, key64, tweaks, ct, unit, decrypt=True, block=block) == data


@settings(max_examples=12, deadline=None)
@given(unit_blocks=st.integers(1, 40), nunits=st.integers(1, 6),
       block=st.sampled_from([32, 64, 96, 128]), seed=st.integers(0, 2**32 - 1))
def test_xts_round_trip_model(unit_blocks, nunits, block, seed):
    rng = np.random.default_rng(seed)
    key64, unit = rng.bytes(64), 16 * unit_blocks
    tweaks = [rng.bytes(16) for _ in range(nunits)]
    data = rng.bytes(unit * nunits)
    want = ref.xts(key64, tweaks, data, unit)
    for backend in BACKENDS.values():
        dev = backend()
        ct = _xts(dev, key64, tweaks, data, unit, block=block)
        assert ct == want
        assert _xts(dev, key64, tweaks, ct, unit, decrypt=True, block=block) == data
