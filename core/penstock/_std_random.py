"""The C++ standard library's random engines and distributions, as GCC's libstdc++ implements
them, so readers draw the very sequences DALI's (C++) readers draw from the same seed.

Only what the readers use: ``std::mt19937`` and ``std::shuffle`` (the file list order),
``std::default_random_engine`` (``minstd_rand0``) seeded through ``std::seed_seq`` and
``std::uniform_int_distribution<int>`` (the shuffle buffer's picks).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

_M32 = 0xFFFFFFFF


class MT19937:
    """``std::mt19937(seed)``: numpy's MT19937 with the reference (legacy) integer seeding."""

    def __init__(self, seed: int):
        key = np.random.RandomState(seed & _M32).get_state()[1]
        self._gen = np.random.MT19937()
        self._gen.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": 624}}

    def __call__(self) -> int:
        return int(self._gen.random_raw())


def _uniform_32(g: MT19937, lo: int, hi: int) -> int:
    """``uniform_int_distribution(lo, hi)`` over a full 32-bit engine: libstdc++ scales with
    one 64-bit multiplication and rejects the few low products that would bias it."""
    span = hi - lo + 1
    product = g() * span
    if (product & _M32) < span:
        threshold = (-span & _M32) % span
        while (product & _M32) < threshold:
            product = g() * span
    return lo + (product >> 32)


def std_shuffle(items: list, seed: int) -> list:
    """``std::shuffle(items, std::mt19937(seed))`` as libstdc++ does it: swap positions are drawn
    two at a time from one number whenever the engine's range allows it."""
    a = list(items)
    n = len(a)
    if n < 2:
        return a
    g = MT19937(seed)
    if _M32 // n >= n:
        i = 1
        if n % 2 == 0:  # an odd count of swaps: the first one alone
            j = _uniform_32(g, 0, 1)
            a[i], a[j] = a[j], a[i]
            i += 1
        while i < n:
            span = i + 1
            x = _uniform_32(g, 0, span * (span + 1) - 1)
            j, k = divmod(x, span + 1)
            a[i], a[j] = a[j], a[i]
            a[i + 1], a[k] = a[k], a[i + 1]
            i += 2
        return a
    for i in range(1, n):
        j = _uniform_32(g, 0, i)
        a[i], a[j] = a[j], a[i]
    return a


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


class MinstdRand0:
    """``std::default_random_engine(std::seed_seq{seed})`` of libstdc++ (``minstd_rand0``)."""
    _MOD = 2147483647

    def __init__(self, seed: int):
        self.state = seed_seq([seed & _M32], 4)[3] % self._MOD or 1

    def __call__(self) -> int:
        self.state = self.state * 16807 % self._MOD
        return self.state

    def below(self, k: int) -> int:
        """``uniform_int_distribution<int>(0, k - 1)(engine)``: the engine's values 1..2^31-2
        cut into k equal buckets, rejecting the remainder at the top."""
        scaling = (self._MOD - 2) // k  # the engine gives 2^31 - 2 values
        past = k * scaling
        while True:
            r = self() - 1
            if r < past:
                return r // scaling
