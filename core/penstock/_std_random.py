"""The seeding of the C++ standard library's engines, as the standard defines it, so that
penstock's seeds are DALI's: ``std::seed_seq`` (the pipeline's operator seeds) and
``std::default_random_engine`` (``minstd_rand0``) seeded through it (a reader's shuffle buffer,
whose draws the engine makes: ``_engine.SampleOrder``).
"""
from __future__ import annotations

from typing import Sequence

_M32 = 0xFFFFFFFF
MINSTD_MODULUS = 2147483647


def seed_seq(values: Sequence[int], n: int) -> list[int]:
    """``std::seed_seq(values).generate`` of ``n`` 32-bit words (the standard's algorithm)."""
    b = [0x8B8B8B8B] * n
    s = len(values)
    t = 11 if n >= 623 else 7 if n >= 68 else 5 if n >= 39 else 3 if n >= 7 else (n - 1) // 2
    p = (n - t) // 2
    q = p + t
    m = max(s + 1, n)

    def mix(x: int) -> int:
        return x ^ (x >> 27)

    for k in range(m):
        r1 = 1664525 * mix(b[k % n] ^ b[(k + p) % n] ^ b[(k - 1) % n]) & _M32
        r2 = (r1 + (s if k == 0 else (k % n + values[k - 1]) if k <= s else k % n)) & _M32
        b[(k + p) % n] = (b[(k + p) % n] + r1) & _M32
        b[(k + q) % n] = (b[(k + q) % n] + r2) & _M32
        b[k % n] = r2
    for k in range(m, m + n):
        r3 = 1566083941 * mix((b[k % n] + b[(k + p) % n] + b[(k - 1) % n]) & _M32) & _M32
        r4 = (r3 - k % n) & _M32
        b[(k + p) % n] ^= r3
        b[(k + q) % n] ^= r4
        b[k % n] = r4
    return b


def minstd_state(seed: int) -> int:
    """The state of ``std::default_random_engine(std::seed_seq{seed})`` (libstdc++'s ``minstd_rand0``)."""
    return seed_seq([seed & _M32], 4)[3] % MINSTD_MODULUS or 1
