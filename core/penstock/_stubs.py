"""Type stubs of ``penstock.fn`` and ``penstock.ops``, generated from the operator registry.

``fn`` and ``ops`` are filled at import, so without stubs an IDE sees ``(*inputs, **kwargs)``. The
build writes these (``setup.py``; ``make stubs`` in a checkout): ``fn/__init__.pyi`` and one
``fn/<module>.pyi`` per submodule (``fn/readers.pyi`` ...; a submodule with submodules of its own is
a folder: ``fn/experimental/__init__.pyi``, ``fn/experimental/decoders.pyi``), the same for ``ops``,
each operator with its arguments, their types and defaults, and its doc.

    python -m penstock._stubs [PACKAGE_DIR]   # default: this package's folder
"""
from __future__ import annotations

import enum
import os
import sys
from . import fn as _fn  # noqa: F401  (importing fn declares every operator)
from ._registry import COMMON_ARGS, REQUIRED, SEED_ARG, Arg, ArgType, OpSchema, schemas, snake_case

HEADER = "# Generated from penstock's operator registry by penstock/_stubs.py: do not edit.\n"

ANNOTATION = {
    ArgType.INT: "int", ArgType.FLOAT: "float", ArgType.BOOL: "bool", ArgType.STR: "str",
    ArgType.DTYPE: "types.DALIDataType", ArgType.IMAGE_TYPE: "types.DALIImageType",
    ArgType.INTERP_TYPE: "types.DALIInterpType", ArgType.LAYOUT: "str",
    ArgType.INT_LIST: "int | _Sequence[int]", ArgType.FLOAT_LIST: "float | _Sequence[float]",
    ArgType.STR_LIST: "str | _Sequence[str]", ArgType.BOOL_LIST: "bool | _Sequence[bool]",
    ArgType.ANY: "Any", ArgType.CALLABLE: "Callable[..., Any]",
}
# typing's Sequence under a name no operator has (ops.readers.Sequence is one)
PRELUDE = """from typing import Any, Callable, Sequence as _Sequence

import numpy as np

from penstock import types
from penstock.data_node import DataNode

# an operator input: a DataNode, a list of them (one operator per element), or a constant
_Input = DataNode | list[DataNode] | int | float | bool | _Sequence[Any] | np.ndarray
"""


def annotation(arg: Arg) -> str:
    text = ANNOTATION[arg.type]
    if arg.tensor:
        text += " | DataNode"
    if arg.default is REQUIRED and arg.optional or arg.default is None:
        text += " | None"
    return text


def default(arg: Arg) -> str | None:
    """The default as Python source, or None for a required argument."""
    value = arg.default
    if value is REQUIRED:
        return None if arg.required else "None"
    if isinstance(value, enum.Enum):
        return f"types.{type(value).__name__}.{value.name}"
    if isinstance(value, (tuple, list)):
        return repr(tuple(value)) if all(isinstance(v, (int, float, str, bool)) for v in value) else "..."
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    return "..."


def parameters(schema: OpSchema, skip: tuple[str, ...] = ()) -> list[str]:
    """Keyword parameters: the required ones first (as the registry lists them), then the rest."""
    args = [a for a in schema.arguments.values() if a.name not in skip]
    out = []
    for arg in sorted(args, key=lambda a: default(a) is not None):
        value = default(arg)
        out.append(f"{arg.name}: {annotation(arg)}" + ("" if value is None else f" = {value}"))
    return out


def inputs(schema: OpSchema) -> list[str]:
    if schema.max_inputs == -1:
        return [f"input{i}: _Input" for i in range(schema.min_inputs)] + ["*inputs: _Input"]
    params = [f"input{i}: _Input" for i in range(schema.min_inputs)]
    params += [f"input{i}: _Input | None = None" for i in range(schema.min_inputs, schema.max_inputs)]
    return params + (["/"] if params else [])


def returns(schema: OpSchema) -> str:
    if callable(schema.num_outputs):
        return "Any"
    if schema.num_outputs == 0:
        return "None"
    if schema.num_outputs == 1:
        return "DataNode"
    return f"tuple[{', '.join(['DataNode'] * schema.num_outputs)}]"


def docstring(schema: OpSchema, indent: str) -> str:
    lines = [schema.doc.strip().splitlines()[0] if schema.doc.strip() else schema.fn_name]
    documented = [a for a in schema.arguments.values() if a.doc and a not in COMMON_ARGS and a is not SEED_ARG]
    if documented:
        lines += ["", "Args:"] + [f"    {a.name}: {a.doc}" for a in documented]
    body = "\n".join(f"{indent}{line}" if line else "" for line in lines)
    return f'{indent}"""{body.lstrip()}\n{indent}"""'.replace("\\", "\\\\")


def signature(name: str, params: list[str], result: str, indent: str) -> str:
    """``def name(params) -> result:``, one parameter a line when they do not fit in one."""
    line = f"{indent}def {name}({', '.join(params)}) -> {result}:"
    if len(line) <= 110:
        return line
    inner = indent + "    "
    return f"{indent}def {name}(\n" + "".join(f"{inner}{p},\n" for p in params) + f"{indent}) -> {result}:"


def fn_stub(schema: OpSchema) -> str:
    params = inputs(schema) + (["*"] if schema.max_inputs != -1 else []) + parameters(schema)
    return f"{signature(schema.fn_name.rpartition('.')[2], params, returns(schema), '')}\n{docstring(schema, '    ')}\n"


def ops_stub(schema: OpSchema) -> str:
    per_sample = [f"{a.name}: DataNode | None = None" for a in schema.arguments.values() if a.tensor]
    call = ["self"] + inputs(schema) + (["*"] if per_sample and schema.max_inputs != -1 else []) + per_sample
    return (f"class {schema.class_name}(_OpsBase):\n{docstring(schema, '    ')}\n\n"
            f"{signature('__init__', ['self', '*'] + parameters(schema), 'None', '    ')} ...\n"
            f"{signature('__call__', call, returns(schema), '    ')} ...\n")


def _exported() -> list[OpSchema]:
    return sorted((s for s in schemas().values() if not s.internal), key=lambda s: s.fn_name)


def _submodules() -> tuple[set[str], set[str]]:
    """The submodules that hold operators or aliases of moved ones (``readers``, ``experimental.decoders``
    ...) and those that hold submodules (``experimental``, ``io``), dotted."""
    modules = {m for s in _exported() for m in (s.module, *s.moved_from)} - {""}
    packages = {".".join(m.split(".")[:i]) for m in modules for i in range(1, m.count(".") + 1)}
    return modules, packages


def stub_path(api: str, module: str) -> str:
    """Where the stub of ``api`` (``fn`` or ``ops``) and submodule ``module`` ("" for the top) goes."""
    parts = [api, *module.split(".")] if module else [api]
    return "/".join(parts + ["__init__"] if not module or module in _submodules()[1] else parts) + ".pyi"


def generate() -> dict[str, str]:
    """Relative path (``fn/__init__.pyi`` ...) -> stub text."""
    files: dict[str, list[str]] = {}
    modules, packages = _submodules()
    for api, stub in (("fn", fn_stub), ("ops", ops_stub)):
        for schema in _exported():
            files.setdefault(stub_path(api, schema.module), []).append(stub(schema))
        for parent in ["", *sorted(packages)]:
            children = sorted(m.rpartition(".")[2] for m in modules | packages if m.rpartition(".")[0] == parent)
            files.setdefault(stub_path(api, parent), []).insert(
                0, "".join(f"from . import {child} as {child}\n" for child in children))
        for schema in _exported():
            name = schema.fn_name.rpartition(".")[2] if api == "fn" else schema.class_name
            home = f"penstock.{api}" + (f".{schema.module}" if schema.module else "")
            for former in schema.moved_from:  # deprecated: the operator's former place
                files.setdefault(stub_path(api, former), []).append(f"from {home} import {name} as {name}\n")
        top = files[stub_path(api, "")]
        for schema in _exported():
            for legacy in schema.legacy_names:
                source = f"{schema.module}." if schema.module else ""
                if api == "fn":
                    top.append(f"{snake_case(legacy)} = {source}{schema.fn_name.rpartition('.')[2]}\n")
                else:
                    top.append(f"{legacy} = {source}{schema.class_name}\n")
        if api == "ops":  # not an operator: ops objects chained
            top.append("from penstock.ops._compose import Compose as Compose\n")
    ops_base = "from penstock._generate import OpsBase as _OpsBase\n"
    return {path: HEADER + PRELUDE + (ops_base if path.startswith("ops/") else "") + "\n\n"
            + "\n\n".join(parts) for path, parts in sorted(files.items())}


def write(package_dir: str) -> list[str]:
    """Writes the stubs (and the ``py.typed`` marker) into ``package_dir`` (the ``penstock``
    folder), in place of those written before; returns the paths written."""
    for api in ("fn", "ops"):
        for folder, _, names in os.walk(os.path.join(package_dir, api)):
            for name in names:
                path = os.path.join(folder, name)
                if name.endswith(".pyi"):
                    with open(path) as f:
                        generated = f.read(len(HEADER)) == HEADER
                    if generated:
                        os.remove(path)
    written = []
    for relative, text in generate().items():
        path = os.path.join(package_dir, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        written.append(path)
    marker = os.path.join(package_dir, "py.typed")
    open(marker, "w").close()
    return written + [marker]


def main(argv: list[str]) -> None:
    package_dir = argv[0] if argv else os.path.dirname(os.path.abspath(__file__))
    print(f"wrote {len(write(package_dir))} files under {package_dir}")


if __name__ == "__main__":
    main(sys.argv[1:])

