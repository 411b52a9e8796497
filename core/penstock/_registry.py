"""The operator registry: every operator is declared once, as a schema.

A schema names the operator, its inputs and outputs, its arguments (type, default, whether a
per-sample DataNode may be given), the devices it runs on and its flags. ``fn.*``, ``ops.*``,
the legacy flat aliases, argument checking and the operator docs are all generated from it.
"""
from __future__ import annotations

import dataclasses
import enum
import re
from typing import Any, Callable, Sequence

import numpy as np

from .types import DALIDataType, DALIImageType, DALIInterpType, ScalarConstant, to_dali_type


class ArgumentValueError(ValueError, RuntimeError):
    """A bad argument value. DALI reports these from its backend as RuntimeError; Python code
    checks for ValueError: both catch it."""


class ArgumentTypeError(TypeError, ValueError, RuntimeError):
    """An argument of the wrong type or a missing one (DALI: ValueError from the conversion, or
    RuntimeError from the backend)."""


class UnknownArgumentError(TypeError, KeyError, RuntimeError):
    """An argument the operator does not have (DALI: KeyError)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def as_argument_error(error: Exception) -> Exception:
    """``error`` (a ValueError or TypeError raised while checking arguments) as the class that
    ``except RuntimeError`` also catches, same message."""
    if isinstance(error, RuntimeError):
        return error
    cls = ArgumentTypeError if isinstance(error, TypeError) else ArgumentValueError
    return cls(*error.args)


class _Required:
    def __repr__(self) -> str:
        return "<required>"


REQUIRED = _Required()


class ArgType(enum.Enum):
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    STR = "str"
    DTYPE = "DALIDataType"
    IMAGE_TYPE = "DALIImageType"
    INTERP_TYPE = "DALIInterpType"
    LAYOUT = "layout string"
    INT_LIST = "list of int"
    FLOAT_LIST = "list of float"
    STR_LIST = "list of str"
    BOOL_LIST = "list of bool"
    ANY = "any"
    CALLABLE = "callable"


@dataclasses.dataclass(frozen=True)
class Arg:
    """One argument of an operator."""
    name: str
    type: ArgType
    default: Any = REQUIRED
    doc: str = ""
    tensor: bool = False            # may be a per-sample argument input (a DataNode)
    aliases: tuple[str, ...] = ()   # deprecated spellings, accepted with a warning
    ignored_aliases: tuple[str, ...] = ()  # deprecated arguments that no longer do anything
    optional: bool = False          # has no default value, but may be left out (None)
    range: tuple[Any, Any] | None = None  # inclusive (low, high) of constant values; None: unbounded

    @property
    def required(self) -> bool:
        return self.default is REQUIRED and not self.optional


COMMON_ARGS = (
    Arg("name", ArgType.STR, optional=True, doc="instance name (readers: used by reader_name)"),
    Arg("preserve", ArgType.BOOL, False, "keep the operator even if its outputs are unused"),
    Arg("bytes_per_sample_hint", ArgType.INT_LIST, (0,), "output size hint (memory preallocation)"),
    Arg("device", ArgType.STR, optional=True, doc="'cpu', 'gpu' or 'mixed'"),
)
SEED_ARG = Arg("seed", ArgType.INT, -1, "random seed; -1 derives one from the pipeline seed")


@dataclasses.dataclass
class OpSchema:
    """The declaration of one operator."""
    name: str                         # "Resize", "readers.File" (ops path, dots for submodules)
    doc: str
    args: Sequence[Arg] = ()
    min_inputs: int = 1
    max_inputs: int | None = None     # None: same as min_inputs; -1: unbounded
    num_outputs: int | Callable[[dict], int] = 1
    devices: tuple[str, ...] = ("cpu",)
    fn_name: str | None = None        # snake_case of the class name unless given
    legacy_names: tuple[str, ...] = ()  # flat ops aliases: "FileReader" ...
    moved_from: tuple[str, ...] = ()  # former module paths ("experimental.decoders"): deprecated aliases
    deprecated: bool = False          # the operator itself is deprecated: every use warns
    replaced_by: str | None = None    # a deprecated operator's successor (its fn name), if any
    deprecation_note: str = ""        # what else a deprecated operator's warning says
    # DALI keeps its deprecated names (and a few operators) out of its docs, in `hidden` submodules
    # (fn.hidden.file_reader is fn.file_reader): the aliases' places, and the operator's own
    aliases_hidden: bool = True
    hidden: bool = False
    is_reader: bool = False
    is_random: bool = False
    is_source: bool = False           # produces data from outside the graph (batch size source)
    no_prune: bool = False
    internal: bool = False            # not exported to fn/ops (arithmetic, constants ...)
    origin: str = ""                  # where a custom operator comes from (a plugin library, "python"); "" built in
    input_layouts: tuple[str, ...] = ()  # accepted layouts of input 0 (_image_layout.input_layout)
    host_inputs: tuple[int, ...] = ()  # positional inputs a GPU kernel reads on the host (shapes, matrices)

    def __post_init__(self) -> None:
        if self.max_inputs is None:
            self.max_inputs = self.min_inputs
        all_args = list(self.args) + list(COMMON_ARGS) + ([SEED_ARG] if self.is_random else [])
        self.arguments: dict[str, Arg] = {}
        self.alias_of: dict[str, str] = {}
        self.ignored: set[str] = set()
        for a in all_args:
            self.arguments.setdefault(a.name, a)
            for al in a.aliases:
                self.alias_of[al] = a.name
            self.ignored.update(a.ignored_aliases)
        module, _, cls = self.name.rpartition(".")
        self.module = module              # "readers"
        self.class_name = cls             # "File"
        if self.fn_name is None:
            self.fn_name = (module + "." if module else "") + snake_case(cls)
        self.schema_name = self.name.replace(".", "__")  # DALI's schema naming

    def n_outputs(self, args: dict, num_inputs: int = 0) -> int:
        """Output count; a callable ``num_outputs`` may take (args) or (args, number of inputs)."""
        if not callable(self.num_outputs):
            return self.num_outputs
        if self.num_outputs.__code__.co_argcount == 2:
            return self.num_outputs(args, num_inputs)
        return self.num_outputs(args)


def snake_case(name: str) -> str:
    special = {"BbFlip": "bb_flip", "MXNetReader": "mxnet_reader", "TFRecord": "tfrecord",
               "COCO": "coco", "TFRecordReader": "tfrecord_reader", "COCOReader": "coco_reader"}
    if name in special:
        return special[name]
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s)
    return s.lower()


# ---- registry ----------------------------------------------------------------------------

_SCHEMAS: dict[str, OpSchema] = {}
_KERNELS: dict[tuple[str, str], type] = {}
# Called with (schema, declared) when an operator is declared after fn/ops/dynamic filled themselves
# (custom operators) or withdrawn: they add or drop its entries.
_LISTENERS: list[Callable[[OpSchema, bool], None]] = []


def on_change(listener: Callable[[OpSchema, bool], None]) -> None:
    """``listener(schema, declared)`` runs for every operator declared (True) or withdrawn (False) from now on."""
    _LISTENERS.append(listener)


def withdraw(name: str) -> None:
    """Removes a custom operator (a redeclared Python operator, tests): its schema, kernels and entries."""
    schema = _SCHEMAS.pop(name)
    for key in [k for k in _KERNELS if k[0] == name]:
        del _KERNELS[key]
    for listener in _LISTENERS:
        listener(schema, False)


def register(schema: OpSchema, device: str | tuple[str, ...] = "cpu") -> Callable[[type], type]:
    """Class decorator: declares ``schema`` and registers the class as its kernel on ``device``
    (one device or several: an operator whose planning is shared by its devices' kernels)."""
    devices = (device,) if isinstance(device, str) else tuple(device)

    def wrap(cls: type) -> type:
        if schema.name in _SCHEMAS and _SCHEMAS[schema.name] is not schema:
            raise RuntimeError(f"operator {schema.name} is declared twice")
        undeclared = [d for d in devices if d not in schema.devices]
        if undeclared:
            raise RuntimeError(f"operator {schema.name}: a kernel for {undeclared} is registered but the "
                               f"declaration lists only {schema.devices}")
        new = schema.name not in _SCHEMAS
        _SCHEMAS[schema.name] = schema
        for d in devices:
            _KERNELS[(schema.name, d)] = cls
        cls.schema = schema
        if new:
            for listener in _LISTENERS:
                listener(schema, True)
        return cls
    return wrap


def register_kernel(schema_name: str, device: str) -> Callable[[type], type]:
    """Registers another device's kernel for an already declared operator."""
    def wrap(cls: type) -> type:
        _KERNELS[(schema_name, device)] = cls
        cls.schema = _SCHEMAS[schema_name]
        return cls
    return wrap


def schemas() -> dict[str, OpSchema]:
    return dict(_SCHEMAS)


def get_schema(name: str) -> OpSchema:
    key = name.replace("__", ".")
    if key not in _SCHEMAS:
        raise KeyError(f"no operator named '{name}'")
    return _SCHEMAS[key]


def kernel_for(schema: OpSchema, device: str) -> type:
    try:
        return _KERNELS[(schema.name, device)]
    except KeyError:
        raise RuntimeError(f"{schema.fn_name} has no kernel for device '{device}' "
                           f"(it runs on: {', '.join(schema.devices)})") from None


def registered_ops(device: str) -> list[str]:
    return sorted(s.schema_name for (n, d), _ in _KERNELS.items() for s in [_SCHEMAS[n]] if d == device)


# ---- argument checking -------------------------------------------------------------------

def _is_data_node(v: Any) -> bool:
    from .data_node import DataNode
    return isinstance(v, DataNode)


def _scalar(value: Any, kind: type, arg: Arg, op: str) -> Any:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, str) and kind in (int, float):  # DALI converts a string given for a number
        try:
            value = kind(value)
        except ValueError as exc:
            raise ArgumentTypeError(f"{op}: argument '{arg.name}' expects {arg.type.value}: {exc}") from None
    if kind is bool:
        if isinstance(value, (bool, np.bool_, int, np.integer)) and value in (0, 1):
            return bool(value)
    elif kind is int:
        if isinstance(value, (bool, np.bool_, int, np.integer)) or (
                isinstance(value, (float, np.floating)) and float(value).is_integer()):
            if not -2 ** 63 <= int(value) < 2 ** 63:  # arguments are 64-bit, as in DALI
                raise ArgumentValueError(f"{op}: argument '{arg.name}' expects {arg.type.value} in the 64-bit "
                                 f"range, got {value!r}")
            return int(value)
    elif kind is float:
        if isinstance(value, (bool, int, float, np.integer, np.floating)):
            return float(value)
    elif kind is str:
        if isinstance(value, str):
            return value
    raise ArgumentTypeError(f"{op}: argument '{arg.name}' expects {arg.type.value}, "
                            f"got {type(value).__name__} ({value!r})")


def convert_arg(arg: Arg, value: Any, op: str) -> Any:
    """Checks and normalizes a scalar (non-DataNode) argument value."""
    out = _convert(arg, value, op)
    if arg.range is not None and out is not None:
        lo, hi = arg.range
        if any((lo is not None and v < lo) or (hi is not None and v > hi)
               for v in (out if isinstance(out, tuple) else (out,))):
            bounds = f"[{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]"
            raise ArgumentValueError(f"{op}: argument '{arg.name}' expects {arg.type.value} in {bounds}, "
                                     f"got {value!r}")
    return out


def _convert(arg: Arg, value: Any, op: str) -> Any:
    t = arg.type
    if t is ArgType.ANY:
        return value
    if isinstance(value, ScalarConstant):  # types.ScalarConstant(5) given for an argument: its value, as in DALI
        value = value.value
    if t is ArgType.CALLABLE:
        if not callable(value):
            raise TypeError(f"{op}: argument '{arg.name}' expects a callable, got "
                            f"{type(value).__name__} ({value!r})")
        return value
    if t in (ArgType.INT_LIST, ArgType.FLOAT_LIST, ArgType.STR_LIST, ArgType.BOOL_LIST):
        kind = {ArgType.INT_LIST: int, ArgType.FLOAT_LIST: float,
                ArgType.STR_LIST: str, ArgType.BOOL_LIST: bool}[t]
        if isinstance(value, np.ndarray):
            value = value.reshape(-1).tolist()
        if isinstance(value, (list, tuple)):
            return tuple(_scalar(v, kind, arg, op) for v in value)
        return (_scalar(value, kind, arg, op),)
    if t is ArgType.INT:
        return _scalar(value, int, arg, op)
    if t is ArgType.FLOAT:
        return _scalar(value, float, arg, op)
    if t is ArgType.BOOL:
        return _scalar(value, bool, arg, op)
    if t in (ArgType.STR, ArgType.LAYOUT):
        return "" if value is None else _scalar(value, str, arg, op)
    enum_type = {ArgType.DTYPE: DALIDataType, ArgType.IMAGE_TYPE: DALIImageType,
                 ArgType.INTERP_TYPE: DALIInterpType}[t]
    if t is ArgType.DTYPE and (isinstance(value, str) or any(value is py for py in (bool, int, float))):
        # refused as DALI 2.4 refuses them: "float" is FLOAT (32-bit) in DALI but float64 in numpy, and
        # so is Python's float; numpy types (np.float32) say their width and are taken
        raise ArgumentTypeError(f"{op}: argument '{arg.name}' expects {t.value} (types.FLOAT ...) or a numpy type "
                                f"(np.float32 ...), got {value!r}: type names and Python types are refused, as "
                                "DALI refuses them ('float' is 32-bit in DALI, 64-bit in numpy)")
    try:
        if t is ArgType.DTYPE and not isinstance(value, (int, enum.Enum)):
            return to_dali_type(value)
        if isinstance(value, enum.Enum) and not isinstance(value, enum_type):
            raise ValueError
        return enum_type(int(value))
    except (ValueError, TypeError):
        raise ArgumentTypeError(f"{op}: argument '{arg.name}' expects {t.value}, got {value!r}") from None


def raise_unknown(schema: OpSchema, key: str, op: str) -> None:
    known = ", ".join(sorted(a for a in schema.arguments))
    raise UnknownArgumentError(f"{op}: unknown argument '{key}'. Known arguments: {known}")


def check_known(schema: OpSchema, kwargs: dict, op: str) -> None:
    """Raises for an argument the operator does not have (DALI checks names before inputs)."""
    for key in kwargs:
        if key not in schema.arguments and key not in schema.alias_of and key not in schema.ignored:
            raise_unknown(schema, key, op)


def split_args(schema: OpSchema, kwargs: dict, op_label: str | None = None) -> tuple[dict, dict]:
    """Validates keyword arguments: returns (scalar args, argument inputs (DataNodes))."""
    import warnings
    op = op_label or schema.fn_name
    scalars: dict[str, Any] = {}
    tensors: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in schema.ignored:
            warnings.warn(f"{op}: the argument `{key}` is no longer used and will be removed in a future release "
                          "(it is deprecated and has no effect)", DeprecationWarning, 3)
            continue
        name = key
        if key in schema.alias_of:
            name = schema.alias_of[key]
            warnings.warn(f"{op}: argument '{key}' is deprecated; use '{name}'", DeprecationWarning, 3)
            if name in kwargs:
                raise ArgumentValueError(f"{op}: both '{key}' and its new name '{name}' were given")
        arg = schema.arguments.get(name)
        if arg is None:
            raise_unknown(schema, key, op)
        if value is None:
            continue  # None means "default"
        if _is_data_node(value) or (isinstance(value, np.ndarray) and value.ndim > 0 and arg.tensor
                                    and arg.type not in (ArgType.INT_LIST, ArgType.FLOAT_LIST)):
            if not arg.tensor:
                raise ArgumentTypeError(f"{op}: argument '{name}' does not accept a per-sample DataNode; "
                                        f"it expects a constant {arg.type.value}")
            tensors[name] = value
        else:
            scalars[name] = convert_arg(arg, value, op)
    return scalars, tensors


def resolve_defaults(schema: OpSchema, scalars: dict, tensors: dict, op_label: str) -> dict:
    """All argument values: given ones plus defaults; raises for missing required ones."""
    out = {}
    for name, arg in schema.arguments.items():
        if name in scalars:
            out[name] = scalars[name]
        elif name in tensors:
            continue
        elif arg.default is REQUIRED:
            if not arg.optional:
                raise ArgumentTypeError(f"{op_label}: required argument '{name}' ({arg.type.value}) is missing")
            out[name] = None
        else:
            out[name] = arg.default
    return out


def describe(schema: OpSchema) -> str:
    """Human-readable documentation generated from the schema."""
    lines = [f"{schema.fn_name} — {schema.doc}", "",
             f"Devices: {', '.join(schema.devices)}.  Inputs: {schema.min_inputs}"
             + ("" if schema.max_inputs == schema.min_inputs else
                f"..{'*' if schema.max_inputs == -1 else schema.max_inputs}")
             + f".  Outputs: {schema.num_outputs if not callable(schema.num_outputs) else 'variable'}.",
             "", "Arguments:"]
    for a in schema.arguments.values():
        default = "required" if a.required else ("None" if a.default is REQUIRED else repr(a.default))
        lines.append(f"  {a.name} ({a.type.value}{', per-sample' if a.tensor else ''}) = {default}"
                     + (f": {a.doc}" if a.doc else ""))
    return "\n".join(lines)
