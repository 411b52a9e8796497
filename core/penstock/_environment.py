"""Settings from environment variables, read when they are used, with one error that names the
variable and what it takes."""
from __future__ import annotations

import os
from typing import Callable, TypeVar

Number = TypeVar("Number", int, float)


def non_negative(name: str, default: Number, what: str, parse: Callable[[str], Number] = int) -> Number:
    """``name``'s value, parsed (``int`` or ``float``), ``default`` when unset; a ValueError
    ("NAME='x': expected WHAT") when it is not a number of that kind or is negative."""
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        number = parse(value)
    except ValueError:
        number = -1
    if number < 0:
        raise ValueError(f"{name}={value!r}: expected {what}")
    return number


def one_of(name: str, default: str, choices: tuple[str, ...]) -> str:
    """``name``'s value, one of ``choices`` (matched exactly), ``default`` when unset; a ValueError
    ("NAME='x': expected one of ...") otherwise."""
    value = os.environ.get(name)
    if value is None:
        return default
    if value not in choices:
        raise ValueError(f"{name}={value!r}: expected one of {', '.join(map(repr, choices))}")
    return value
