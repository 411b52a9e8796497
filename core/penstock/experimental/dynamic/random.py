"""Random state of the dynamic mode: ``RNG`` generators, the thread's default one (``set_seed``),
and, added when the module is imported, the random operators (``ndd.random.uniform`` ...).

Each call of a random operator draws its seed from a generator (``rng=``, else the thread's
default), so a run is reproduced by seeding that generator the same way. The draws of a call
depend only on that seed, never on threads, timing or where the work runs (see ``Operator.rng_for``).
"""
from __future__ import annotations

import operator as _operator
import os as _os
import threading as _threading
from typing import Any

__all__ = ["RNG", "get_default_rng", "set_seed"]

_MASK = 0xFFFFFFFF


def _philox4x32(counter: int, key: int) -> tuple[int, int, int, int]:
    """Philox4x32-10 (Salmon et al., 2011): four 32-bit words from a 128-bit counter and 64-bit key."""
    c0, c1, c2, c3 = (counter >> 0) & _MASK, (counter >> 32) & _MASK, (counter >> 64) & _MASK, (counter >> 96) & _MASK
    k0, k1 = key & _MASK, (key >> 32) & _MASK
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0) & _MASK, p1 & _MASK, ((p0 >> 32) ^ c3 ^ k1) & _MASK, p0 & _MASK
        k0, k1 = (k0 + 0x9E3779B9) & _MASK, (k1 + 0xBB67AE85) & _MASK
    return c0, c1, c2, c3


class RNG:
    """A counter-based generator of 32-bit words (Philox4x32-10), for reproducible random operators.

    ``RNG(seed=...)`` starts a sequence from a seed (64 bits; a random one if not given);
    ``RNG(state=...)`` continues one from a saved ``state``. ``rng()`` draws a word,
    ``advance(n)`` skips n draws, ``clone()`` continues the same sequence independently.
    """

    def __init__(self, seed: int | None = None, state: Any = None):
        if state is not None:
            if seed is not None:
                raise ValueError("Cannot specify both `seed` and `state`")
            self.set_state(state)
        else:
            self.seed = int.from_bytes(_os.urandom(8), "little") if seed is None else seed

    @property
    def seed(self) -> int:
        raise AttributeError("seed is write-only")

    @seed.setter
    def seed(self, value: int) -> None:
        """Restarts the sequence from ``value`` (taken modulo 2**64)."""
        self._key = _operator.index(value) & 0xFFFFFFFFFFFFFFFF
        self._draws = 0
        self._block: tuple[int, tuple] | None = None

    def __call__(self) -> int:
        index, lane = divmod(self._draws, 4)
        if self._block is None or self._block[0] != index:
            self._block = (index, _philox4x32(index, self._key))
        self._draws += 1
        return self._block[1][lane]

    def advance(self, n: int) -> None:
        """Skips ``n`` draws (as ``n`` calls would)."""
        n = _operator.index(n)
        if n < 0:
            raise ValueError("Cannot advance by a negative number")
        self._draws += n

    def clone(self) -> "RNG":
        return RNG(state=self.state)

    # -- state: the same get_state/set_state pair as readers
    def get_state(self, *, cuda_stream: Any = None) -> str:
        """The generator's position, as a string ``RNG(state=...)`` or ``set_state`` takes."""
        return f"{self._key:016x}:{self._draws:x}"

    def set_state(self, value: Any) -> None:
        key, sep, draws = str(value).partition(":")
        try:
            self._key, self._draws = int(key, 16), int(draws, 16)
        except ValueError:
            raise ValueError(f"not an RNG state: {value!r}") from None
        if not sep or not 0 <= self._key < 2 ** 64 or self._draws < 0:
            raise ValueError(f"not an RNG state: {value!r}")
        self._block = None

    state = property(get_state, set_state)

    def __repr__(self) -> str:
        return f"RNG(state='{self.state}')"


_local = _threading.local()


def get_default_rng() -> RNG:
    """This thread's default generator (random operators without ``rng=`` draw from it)."""
    rng = getattr(_local, "rng", None)
    if rng is None:
        rng = _local.rng = RNG()
    return rng


def set_seed(seed: int) -> None:
    """Restarts this thread's default generator from ``seed``."""
    get_default_rng().seed = seed


def draw_seed(rng: Any = None) -> int:
    """The seed of one random operator call, drawn from ``rng`` (the default generator if None)."""
    if rng is None:
        rng = get_default_rng()
    if not isinstance(rng, RNG):
        raise TypeError(f"rng must be an instance of {__name__}.RNG, got {type(rng).__module__}."
                         f"{type(rng).__qualname__}")
    return ((rng() << 32) | rng()) >> 1  # 63 bits: an operator seed is a non-negative int64
