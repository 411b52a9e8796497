"""Arithmetic expressions on DataNodes (operators, ``math`` functions, Python's own builtins) over
small typed batches: the boolean and bitwise refusals, DataNodes in a conditional context, layout
and shape broadcasting, integer division by zero, integer powers, float16 and constant operands.
Errors are compared by class and by DALI's words (code written for DALI matches them)."""
from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import numpy as np

from _harness import _const


@dataclasses.dataclass
class Expression:
    id: str
    expr: str       # over the sources a, b, c and lib, math, fn, types, np
    data: tuple     # per source: (its two samples, dtype, layout or None)
    inputs: tuple = ()   # the harness's own sources: none, the expression brings its data
    random: bool = False
    tolerance: float = 0
    text: bool = True    # an error must carry DALI's words

    def graph(self, lib: Any) -> Any:
        nodes = [lib.fn.external_source(source=_const([np.array(s, dtype) for s in samples]), layout=layout)
                 for samples, dtype, layout in self.data]
        scope = {"lib": lib, "math": lib.math, "fn": lib.fn, "types": lib.types, "np": np}
        return eval(self.expr, scope, dict(zip("abc", nodes)))  # noqa: S307 - the table's own expressions


def _src(dtype: str, shape: tuple = (3,), layout: str | None = None, values: Any = None) -> tuple:
    if values is None:
        n = int(np.prod(shape))
        values = [np.arange(1, n + 1).reshape(shape), np.arange(2, n + 2).reshape(shape)]
        if dtype == "bool":
            values = [(v % 2).astype(bool) for v in values]
    return ([np.asarray(v).tolist() for v in values], dtype, layout)


B, I, F, U8 = _src("bool"), _src("int32"), _src("float32"), _src("uint8")

UNARY_MATH = ["sqrt", "rsqrt", "cbrt", "exp", "log", "log2", "log10", "abs", "fabs", "floor", "ceil", "sin",
              "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh"]
BINARY_OPS = {"add": "a + b", "sub": "a - b", "mul": "a * b", "truediv": "a / b", "floordiv": "a // b",
              "mod": "a % b", "pow": "a ** b", "and": "a & b", "or": "a | b", "xor": "a ^ b", "lshift": "a << b",
              "rshift": "a >> b", "eq": "a == b", "lt": "a < b", "min": "math.min(a, b)", "max": "math.max(a, b)",
              "mpow": "math.pow(a, b)", "fpow": "math.fpow(a, b)", "atan2": "math.atan2(a, b)"}


def _booleans() -> list[Expression]:
    cases = [Expression(f"bool:{name}(bool,bool)", expr, (B, B)) for name, expr in BINARY_OPS.items()]
    cases += [Expression(f"bool:{name}(bool,True)", expr.replace("b", "True"), (B,))
              for name, expr in BINARY_OPS.items() if "math" not in expr]
    cases += [Expression(f"bool:{name}(bool,int)", expr, (B, I)) for name, expr in BINARY_OPS.items()
              if name not in ("lshift", "rshift")]
    cases += [Expression(f"bool:math.{f}(bool)", f"math.{f}(a)", (B,)) for f in UNARY_MATH]
    cases += [Expression("bool:neg", "-a", (B,)), Expression("bool:pos", "+a", (B,)),
              Expression("bool:invert", "~a", (B,)), Expression("bool:clamp(bool,bool,bool)", "math.clamp(a, b, c)",
                                                               (B, B, B)),
              Expression("bool:clamp(bool,bool,int)", "math.clamp(a, b, c)", (B, B, I)),
              Expression("bool:clamp(int,bool,bool)", "math.clamp(a, b, c)", (I, B, B)),
              Expression("bool:clamp(bool,0,1)", "math.clamp(a, 0, 1)", (B,))]
    return cases


def _bitwise() -> list[Expression]:
    cases = []
    for (name, expr), (tname, types_) in itertools.product(
            [(n, e) for n, e in BINARY_OPS.items() if n in ("and", "or", "xor", "lshift", "rshift")],
            [("float,float", (F, F)), ("float,int", (F, I)), ("int,float", (I, F)), ("uint8,int", (U8, I))]):
        cases.append(Expression(f"bitwise:{name}({tname})", expr, types_))
    return cases + [Expression("bitwise:invert(float)", "~a", (F,)), Expression("bitwise:invert(uint8)", "~a", (U8,))]


def _conditional_context() -> list[Expression]:
    return [Expression(f"conditional:{name}", expr, (I, I)) for name, expr in
            [("min", "min(a, b)"), ("max", "max(a, b)"), ("if", "a if a else b"), ("bool", "bool(a)"),
             ("not", "not a"), ("and", "a and b"), ("or", "a or b"), ("if_comparison", "a if a < b else b")]]


def _nested_nodes() -> list[Expression]:
    """A list holding DataNodes as an operand (an operator's several outputs, passed whole)."""
    return [Expression(f"nested:{name}", expr, (F, F)) for name, expr in
            [("add", "a + [b]"), ("rmul", "[a, b] * b"), ("pow", "a ** [b]"), ("eq", "a == (b,)"),
             ("math.max", "math.max([a, b], 5)"), ("math.clamp", "math.clamp(a, 0, [b])"),
             ("math.atan2", "math.atan2(a, [b])"), ("nested_twice", "a + [[b]]")]]


def _tensor(desc: int | str) -> tuple:
    """A source of ``desc`` dimensions (an int: without a layout) or with layout ``desc``."""
    ndim, layout = (desc, None) if isinstance(desc, int) else (len(desc), desc)
    return _src("float32", (5, 7, 11, 13)[4 - ndim:] if ndim else (), layout)


# operand layouts (an int: that many dimensions, no layout): DALI takes equal ones, or one a suffix of the other
BINARY_LAYOUTS = [(4, "C"), ("C", 3), ("C", 1), (1, "C"), (0, "C"), ("ABCD", 0), ("ABCD", 3), ("ABCD", "D"),
                  ("D", "ABCD"), ("ABCD", "CD"), ("BCD", "ABCD"), ("ABCD", "ABCD"), ("ABCD", "ABC"), ("X", "ABCD"),
                  ("CD", "DC")]
TERNARY_LAYOUTS = [("ABCD", "CD", "D"), ("ABCD", "D", "CD"), (3, "ABCD", "CD"), (0, "ABCD", 0), (0, "BCD", 4),
                   (3, 4, "CD"), (4, "ABCD", 4), (4, "A", "B"), ("BCD", "CD", "ACD")]


def _layouts() -> list[Expression]:
    ops = ["a + b", "a * b", "a / b", "a // b", "a ** b", "a < b", "math.min(a, b)", "math.atan2(a, b)"]
    cases = [Expression(f"layout:{'/'.join(map(str, lay))}:{expr}", expr, tuple(_tensor(d) for d in lay))
             for k, lay in enumerate(BINARY_LAYOUTS) for expr in (ops[k % len(ops)], ops[(k + 3) % len(ops)])]
    cases += [Expression(f"layout:{'/'.join(map(str, lay))}:clamp", "math.clamp(a, b, c)",
                         tuple(_tensor(d) for d in lay)) for lay in TERNARY_LAYOUTS]
    cases.append(Expression("layout:int_and", "a & b", (_src("int32", (2, 3), "HW"), _src("int32", (2, 3), "WH"))))
    return cases


def _f(*shape: int) -> tuple:
    return _src("float32", shape)


def _broadcasting() -> list[Expression]:
    pairs = [((2, 3, 4), (2, 3, 3)), ((1, 4), (3,)), ((2, 3), (4,)), ((2, 4, 3), (3, 4, 5)), ((2, 3), (4, 3, 5)),
             ((4, 2, 3), (3,)), ((2, 3), (5, 1, 3)), ((), (2,)), ((2, 1), (1, 3)), ((3, 1, 2), (4, 2))]
    cases = [Expression(f"broadcast:{a}+{b}", "a + b", (_f(*a), _f(*b))) for a, b in pairs]
    cases += [Expression("broadcast:int_mul", "a * b", (_src("int32", (2, 3)), _src("int32", (2,)))),
              Expression("broadcast:clamp", "math.clamp(a, b, c)", (_f(2, 3), _f(3), _f(2, 4))),
              Expression("broadcast:clamp_ok", "math.clamp(a, b, c)", (_f(2, 3), _f(3), _f(2, 1)))]
    # 10 dimensions: DALI computes up to 6 runs of dimensions broadcast alike and refuses more
    alternating = (2, 1) * 5
    cases += [Expression("broadcast:10_groups", "a + b", (_f(*alternating), _f(*alternating[::-1]))),
              Expression("broadcast:6_groups_10d", "a * b", (_f(2, 1, 1, 1, 2, 1, 2, 2, 2, 1),
                                                             _f(1, 2, 2, 2, 1, 2, 1, 1, 1, 2))),
              Expression("broadcast:6_groups_10d_clamp", "math.clamp(a, b, c)",
                         (_f(2, 1, 1, 1, 2, 1, 2, 2, 2, 1), _f(1, 2, 2, 2, 1, 2, 1, 1, 1, 2), _f(2)))]
    return cases


def _division_by_zero() -> list[Expression]:
    with_zero = _src("int32", values=[[3, 0, -4], [5, 6, 7]])
    ints = _src("int32", values=[[7, -7, 9], [0, 1, -2]])
    return [Expression("zero:int_floordiv", "a // b", (ints, with_zero)),
            Expression("zero:int_mod", "a % b", (ints, with_zero)),
            Expression("zero:int_floordiv_const", "a // 0", (ints,)),
            Expression("zero:int_mod_const", "a % 0", (ints,)),
            Expression("zero:uint8_floordiv", "a // b", (U8, _src("uint8", values=[[0, 1, 2], [3, 4, 5]]))),
            Expression("zero:int_floordiv_bool", "a // b", (ints, B)),
            Expression("zero:int_truediv", "a / b", (ints, with_zero)),
            Expression("zero:float_floordiv", "a // b", (F, _src("float32", values=[[0, 1, 2], [3, 0, 5]]))),
            Expression("zero:int_floordiv_nonzero", "a // b", (ints, _src("int32", values=[[2, -3, 4], [5, 6, -7]]))),
            Expression("zero:int_mod_nonzero", "a % b", (ints, _src("int32", values=[[2, -3, 4], [5, 6, -7]])))]


def _integer_powers() -> list[Expression]:
    cases = []
    for dtype in ("int8", "int16", "int32", "int64", "uint8", "uint32"):
        signed = not dtype.startswith("u")
        bases = _src(dtype, values=[[-3, -2, -1, 0, 1, 2, 3] if signed else [0, 1, 2, 3, 4, 5, 255]] * 2)
        exps = [[-3, -2, -1, 0, 1, 2, 3], [-1, -1, -1, -1, -1, -1, -1]] if signed else [[0, 1, 2, 3, 4, 5, 6]] * 2
        cases += [Expression(f"power:{dtype}", "a ** b", (bases, _src(dtype, values=exps))),
                  Expression(f"power:{dtype}_math", "math.pow(a, b)", (bases, _src(dtype, values=exps))),
                  Expression(f"power:{dtype}_const", "a ** -1" if signed else "a ** 3", (bases,)),
                  Expression(f"power:{dtype}_rconst", "2 ** b", (_src(dtype, values=exps),))]
    return cases


def _float16_and_constants() -> list[Expression]:
    h = "fn.cast(a, dtype=types.FLOAT16)"
    return [Expression("float16:add_const", f"{h} + 1", (F,)), Expression("float16:radd", f"b + {h}", (F, I)),
            Expression("float16:both", f"{h} * {h}", (F,)), Expression("float16:neg", f"-{h}", (F,)),
            Expression("float16:sqrt", f"math.sqrt({h})", (F,)),
            Expression("constant:str", "a + 'x'", (I,)), Expression("constant:none", "a + None", (I,)),
            Expression("constant:list", "a + [1, 2, 3]", (I,)), Expression("constant:tuple", "a * (1, 2, 3)", (I,)),
            Expression("constant:float", "a + 0.5", (I,)), Expression("constant:bool", "a + True", (I,)),
            Expression("constant:uint8_big", "a + 300", (U8,)), Expression("constant:array", "a - np.int32([1, 2, 3])", (I,))]


EXPRESSIONS = (_booleans() + _bitwise() + _conditional_context() + _nested_nodes() + _layouts() + _broadcasting()
               + _division_by_zero() + _integer_powers() + _float16_and_constants())
