"""Element-wise math functions on DataNodes (``penstock.math.sqrt(x)`` ...)."""
from __future__ import annotations

from typing import Any

from .operators.arithmetic import binary, expression, unary

__all__ = ["sqrt", "rsqrt", "cbrt", "exp", "log", "log2", "log10", "abs", "fabs", "floor", "ceil",
           "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
           "atanh", "min", "max", "pow", "fpow", "atan2", "clamp"]


def _unary(name: str, doc: str):
    def f(x: Any) -> Any:
        return unary(name, x)
    f.__name__ = name
    f.__doc__ = doc
    return f


sqrt = _unary("sqrt", "Square root (integers give FLOAT).")
rsqrt = _unary("rsqrt", "Reciprocal square root.")
cbrt = _unary("cbrt", "Cube root.")
exp = _unary("exp", "e to the power x.")
log = _unary("log", "Natural logarithm.")
log2 = _unary("log2", "Base-2 logarithm.")
log10 = _unary("log10", "Base-10 logarithm.")
abs = _unary("abs", "Absolute value (keeps the type).")  # noqa: A001
floor = _unary("floor", "Round down.")
ceil = _unary("ceil", "Round up.")
sin = _unary("sin", "Sine (radians).")
cos = _unary("cos", "Cosine.")
tan = _unary("tan", "Tangent.")
asin = _unary("asin", "Arc sine.")
acos = _unary("acos", "Arc cosine.")
atan = _unary("atan", "Arc tangent.")
sinh = _unary("sinh", "Hyperbolic sine.")
cosh = _unary("cosh", "Hyperbolic cosine.")
tanh = _unary("tanh", "Hyperbolic tangent.")
asinh = _unary("asinh", "Inverse hyperbolic sine.")
acosh = _unary("acosh", "Inverse hyperbolic cosine.")
atanh = _unary("atanh", "Inverse hyperbolic tangent.")


def fabs(x: Any) -> Any:
    """Absolute value as a floating-point number."""
    return unary("fabs", x)


def min(a: Any, b: Any) -> Any:  # noqa: A001
    """Element-wise minimum (promotes like +)."""
    return binary("min", a, b)


def max(a: Any, b: Any) -> Any:  # noqa: A001
    """Element-wise maximum (promotes like +)."""
    return binary("max", a, b)


def pow(base: Any, exponent: Any) -> Any:  # noqa: A001
    """base ** exponent (integers stay integers)."""
    return binary("pow", base, exponent)


def fpow(base: Any, exponent: Any) -> Any:
    """base ** exponent, always floating point."""
    return binary("fpow", base, exponent)


def atan2(y: Any, x: Any) -> Any:
    """Arc tangent of y/x, using the signs of both for the quadrant."""
    return binary("atan2", y, x)


def clamp(x: Any, lo: Any, hi: Any) -> Any:
    """min(max(x, lo), hi); the type promotes over all three operands."""
    return expression("clamp", x, lo, hi)
