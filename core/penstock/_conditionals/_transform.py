"""Source transformation of pipeline definitions for ``enable_conditionals=True`` (Python ``ast``).

In a converted function:

* ``if c: ... else: ...`` becomes two nested functions (one per branch) that take and return the
  variables the branches assign, and a call to ``_runtime.if_stmt``;
* ``x if c else y``, ``a and b``, ``a or b`` and ``not a`` become ``_runtime`` calls taking the
  lazily evaluated operands as lambdas (short-circuit semantics);
* every call ``f(...)`` becomes ``call(f)(...)`` (``convert``), so user functions called from the
  pipeline are converted when called. Functions only passed around (``external_source``
  callbacks) are left untouched and stay picklable.

Each of these does exactly what Python does when the condition is not a DataNode.
"""
from __future__ import annotations

import ast
import inspect
import itertools
import sys
import textwrap
import types
from typing import Any

from . import _runtime

_RT = "_ps_rt"  # the name of _CONVERTED_CODE_CALLS inside converted code
_SKIP_MODULES = {"penstock", "nvidia", "numpy", "torch", "jax", "tensorflow", "cupy", "pytest", "_pytest"}
_cache: dict[types.CodeType, types.CodeType | None] = {}


def _rt(attr: str) -> ast.expr:
    return ast.Attribute(value=ast.Name(_RT, ast.Load()), attr=attr, ctx=ast.Load())


def _call(attr: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=_rt(attr), args=list(args), keywords=[])


def _thunk(expr: ast.expr) -> ast.Lambda:
    return ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                                         kwarg=None, defaults=[]), body=expr)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)


def _assigned(stmts: list[ast.stmt]) -> list[str]:
    """Names the statements bind in the enclosing function (not in nested scopes)."""
    found: dict[str, None] = {}

    def walk(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = None
            for d in node.decorator_list:
                walk(d)
            return
        if isinstance(node, _SCOPES):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            found[node.id] = None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                found[(a.asname or a.name).split(".")[0]] = None
        elif isinstance(node, ast.ExceptHandler) and node.name:
            found[node.name] = None
        for child in ast.iter_child_nodes(node):
            walk(child)

    for s in stmts:
        walk(s)
    return [n for n in found if not n.startswith("_ps_")]


def _jumps_out(stmts: list[ast.stmt]) -> bool:
    """Whether the statements return, or break/continue a loop around them."""
    def walk(node: ast.AST, in_loop: bool) -> bool:
        if isinstance(node, _SCOPES):
            return False
        if isinstance(node, ast.Return):
            return True
        if isinstance(node, (ast.Break, ast.Continue)) and not in_loop:
            return True
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            return any(walk(c, True) for c in node.body) or any(walk(c, in_loop) for c in node.orelse)
        return any(walk(c, in_loop) for c in ast.iter_child_nodes(node))

    return any(walk(s, False) for s in stmts)


class _Converter(ast.NodeTransformer):
    def __init__(self, declared: set[str], decls: list[ast.stmt]):
        self._ids = itertools.count()
        self._declared = declared  # global/nonlocal names of the function: never branch-local
        self._decls = decls        # ... so the branch functions repeat their declarations

    # nested functions, lambdas and classes are converted when (and if) they are called
    def visit_FunctionDef(self, node):
        return node

    visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        node.func = _call("call", node.func)
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        self.generic_visit(node)
        return _call("not_", node.operand) if isinstance(node.op, ast.Not) else node

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.expr:
        self.generic_visit(node)
        fn = "and_" if isinstance(node.op, ast.And) else "or_"
        result = node.values[-1]
        for value in reversed(node.values[:-1]):
            result = _call(fn, value, _thunk(result))
        return result

    def visit_IfExp(self, node: ast.IfExp) -> ast.expr:
        self.generic_visit(node)
        return _call("if_exp", node.test, _thunk(node.body), _thunk(node.orelse))

    def visit_If(self, node: ast.If) -> Any:
        jumps = _jumps_out(node.body) or _jumps_out(node.orelse)
        names = tuple(n for n in _assigned(node.body + node.orelse) if n not in self._declared)
        self.generic_visit(node)
        if jumps:
            node.test = _call("jump_cond", node.test)
            return node
        k = next(self._ids)
        names_expr = ast.Tuple([ast.Constant(n) for n in names], ast.Load())

        def branch(fname: str, body: list[ast.stmt]) -> ast.FunctionDef:
            prologue: list[ast.stmt] = []
            for n in names:  # a branch starts from the variables' values before the `if`
                prologue.append(ast.parse(f"if {n!r} in _ps_vars: {n} = _ps_vars[{n!r}]").body[0])
            ret = ast.Return(_call("pick", ast.Call(ast.Name("locals", ast.Load()), [], []), names_expr))
            return ast.FunctionDef(
                name=fname, args=ast.arguments(posonlyargs=[], args=[ast.arg("_ps_vars")], vararg=None,
                                               kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
                body=self._decls + prologue + (body or [ast.Pass()]) + [ret], decorator_list=[], returns=None,
                type_params=[])

        out = f"_ps_out{k}"
        stmts: list[ast.stmt] = [
            ast.Assign([ast.Name(f"_ps_test{k}", ast.Store())], node.test),
            branch(f"_ps_if{k}", node.body),
            branch(f"_ps_else{k}", node.orelse),
            ast.Assign([ast.Name(out, ast.Store())],
                       _call("if_stmt", ast.Name(f"_ps_test{k}", ast.Load()), ast.Name(f"_ps_if{k}", ast.Load()),
                             ast.Name(f"_ps_else{k}", ast.Load()),
                             _call("pick", ast.Call(ast.Name("locals", ast.Load()), [], []), names_expr),
                             names_expr)),
        ]
        for n in names:
            stmts.append(ast.parse(f"if {n!r} in {out}: {n} = {out}[{n!r}]").body[0])
        return stmts


def _declarations(fdef: ast.FunctionDef) -> tuple[set[str], list[ast.stmt]]:
    names: set[str] = set()
    decls: list[ast.stmt] = []

    def walk(node: ast.AST) -> None:
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
            decls.append(type(node)(list(node.names)))
        if isinstance(node, _SCOPES) and node is not fdef:
            return
        for c in ast.iter_child_nodes(node):
            walk(c)

    walk(fdef)
    return names, decls


def _convert_code(func: types.FunctionType) -> types.CodeType | None:
    code = func.__code__
    try:
        source = textwrap.dedent(inspect.getsource(func))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef) or tree.body[0].name != code.co_name:
        return None  # a lambda or something inspect could not isolate
    fdef = tree.body[0]
    fdef.decorator_list = []
    declared, decls = _declarations(fdef)
    conv = _Converter(declared, decls)
    fdef.body = [s for stmt in fdef.body for s in _as_list(conv.visit(stmt))]
    # The factory binds the original free variables (and the runtime) so that the converted
    # function gets the same closure cells as the original.
    factory = ast.FunctionDef(
        name="_ps_factory", args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                                               kw_defaults=[], kwarg=None, defaults=[]),
        body=[ast.Assign([ast.Name(n, ast.Store())], ast.Constant(None)) for n in code.co_freevars + (_RT,)]
        + [fdef, ast.Return(ast.Name(fdef.name, ast.Load()))], decorator_list=[], returns=None, type_params=[])
    module = ast.Module([factory], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, code.co_firstlineno - 1)  # tracebacks point at the user's lines
    compiled = compile(module, code.co_filename, "exec")
    outer = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    return next(c for c in outer.co_consts if isinstance(c, types.CodeType) and c.co_name == fdef.name)


def _as_list(result: Any) -> list:
    return result if isinstance(result, list) else [result]


def _is_library(func: types.FunctionType) -> bool:
    top = (func.__module__ or "").partition(".")[0]
    if top in _SKIP_MODULES or top in sys.stdlib_module_names:
        return True
    path = func.__code__.co_filename
    return "site-packages" in path or "dist-packages" in path or path.startswith("<")


def convert(func: Any) -> Any:
    """``func`` with conditionals converted, or ``func`` itself when it is not user code."""
    if isinstance(func, types.MethodType):
        inner = convert(func.__func__)
        return func if inner is func.__func__ else types.MethodType(inner, func.__self__)
    if not isinstance(func, types.FunctionType) or getattr(func, "_penstock_do_not_convert", False):
        return func
    code = func.__code__
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        return func
    if getattr(func, "_penstock_converted", False) or _is_library(func):
        return func
    if code not in _cache:
        _cache[code] = _convert_code(func)
    new_code = _cache[code]
    if new_code is None:
        return func
    cells = dict(zip(code.co_freevars, func.__closure__ or ()))
    closure = tuple(cells[n] if n in cells else types.CellType(_CONVERTED_CODE_CALLS) for n in new_code.co_freevars)
    new = types.FunctionType(new_code, func.__globals__, func.__name__, func.__defaults__, closure)
    new.__kwdefaults__ = func.__kwdefaults__
    new.__dict__.update(func.__dict__)
    new.__qualname__, new.__doc__, new.__module__ = func.__qualname__, func.__doc__, func.__module__
    new._penstock_converted = True
    return new


# What converted code calls (``_ps_rt.<name>``): the runtime of the conditionals, and ``call``, which
# converts the user functions a pipeline definition calls (``@do_not_convert`` opts out).
_CONVERTED_CODE_CALLS = types.SimpleNamespace(
    call=convert, **{name: getattr(_runtime, name)
                     for name in ("if_stmt", "if_exp", "and_", "or_", "not_", "jump_cond", "pick")})
