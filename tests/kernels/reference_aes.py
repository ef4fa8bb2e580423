"""References for kernels/aes.cu: the AES-256 key schedules in plain Python (FIPS-197), and
block encryption / XTS through the independent ``cryptography`` package."""

from __future__ import annotations

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes


def _xtime(a: int) -> int:
    return ((a << 1) ^ (0x1B if a & 0x80 else 0)) & 0xFF


def _gmul(a: int, b: int) -> int:
    r = 0
    while b:
        if b & 1:
            r ^= a
        a, b = _xtime(a), b >> 1
    return r


def _sbox() -> list[int]:
    inv = [0] * 256
    for a in range(1, 256):
        for b in range(1, 256):
            if _gmul(a, b) == 1:
                inv[a] = b
                break
    out = []
    for x in range(256):
        b, s = inv[x], inv[x]
        for k in range(1, 5):
            s ^= ((b << k) | (b >> (8 - k))) & 0xFF
        out.append(s ^ 0x63)
    return out


SBOX = _sbox()


def _sub_word(w: int) -> int:
    return int.from_bytes(bytes(SBOX[b] for b in w.to_bytes(4, "big")), "big")


def expand_key_enc(key: bytes) -> list[int]:
    """FIPS-197 KeyExpansion of a 32-byte key: 60 big-endian words."""
    assert len(key) == 32
    w = [int.from_bytes(key[4 * i:4 * i + 4], "big") for i in range(8)]
    rcon = 1
    for i in range(8, 60):
        t = w[i - 1]
        if i % 8 == 0:
            t = _sub_word(((t << 8) | (t >> 24)) & 0xFFFFFFFF) ^ (rcon << 24)
            rcon = _xtime(rcon)
        elif i % 8 == 4:
            t = _sub_word(t)
        w.append(w[i - 8] ^ t)
    return w


def _inv_mix_word(w: int) -> int:
    c = w.to_bytes(4, "big")
    m = ((14, 11, 13, 9), (9, 14, 11, 13), (13, 9, 14, 11), (11, 13, 9, 14))
    out = bytes(_gmul(c[0], r[0]) ^ _gmul(c[1], r[1]) ^ _gmul(c[2], r[2]) ^ _gmul(c[3], r[3])
                for r in m)
    return int.from_bytes(out, "big")


def expand_key_dec(key: bytes) -> list[int]:
    """The equivalent inverse cipher's schedule: round keys reversed, InvMixColumns applied to
    rounds 1..13 (FIPS-197 section 5.3.5)."""
    w = expand_key_enc(key)
    out = []
    for r in range(15):
        words = w[4 * (14 - r):4 * (14 - r) + 4]
        out += words if r in (0, 14) else [_inv_mix_word(x) for x in words]
    return out


def ecb(key: bytes, data: bytes, decrypt: bool = False) -> bytes:
    """AES-256 of every 16-byte block of ``data`` independently."""
    c = Cipher(algorithms.AES(key), modes.ECB())
    ctx = c.decryptor() if decrypt else c.encryptor()
    return ctx.update(data) + ctx.finalize()


def xts(key64: bytes, tweaks: list[bytes], data: bytes, unit: int, decrypt: bool = False):
    """AES-256-XTS of ``data`` split into data units of ``unit`` bytes, unit u under the
    16-byte tweak ``tweaks[u]``."""
    out = []
    for u in range(len(data) // unit):
        c = Cipher(algorithms.AES(key64), modes.XTS(tweaks[u]))
        ctx = c.decryptor() if decrypt else c.encryptor()
        out.append(ctx.update(data[u * unit:(u + 1) * unit]) + ctx.finalize())
    return b"".join(out)
