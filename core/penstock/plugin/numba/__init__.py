"""``penstock.plugin.numba``: an operator whose kernel is a Numba function (``fn.numba_function`` /
``NumbaFunction``), as DALI's Numba plugin.

``run_fn(out_0, ..., in_0, ...)`` fills preallocated outputs from the inputs, one sample per call
(``batch_processing=False``) or with lists of every sample's arrays; ``setup_fn(outs, ins)``, once a
batch, writes each output sample's shape (``outs[o][s]``) from the inputs' (``ins[i][s]``); without
it output ``i`` has input ``i``'s shapes and type. On the CPU both are compiled in Numba's nopython mode into
one driver per operator that loops over the batch itself: a batch is one call, without the GIL. On
the GPU ``run_fn`` is a ``numba.cuda`` kernel launched per sample with ``blocks`` x
``threads_per_block`` on the pipeline's stream (as DALI launches it).
"""
from __future__ import annotations

import functools
import textwrap
from typing import Any, Callable, Sequence

import numba
import numpy as np

from ... import _current
from ..._operator import Operator
from ..._registry import Arg, ArgType, OpSchema, register
from ...data_node import DataNode
from ...types import DALIDataType, to_numpy_type
from ... import _generate

MAX_IO = 6  # inputs and outputs, as DALI's operator

NUMBA_FUNCTION = OpSchema(
    "NumbaFunction", "Runs a Numba nopython-mode function (CPU) or numba.cuda kernel (GPU) on the batch.",
    args=[Arg("run_fn", ArgType.CALLABLE, doc="fills the outputs: run_fn(out_0, ..., in_0, ...)"),
          Arg("out_types", ArgType.ANY, doc="DALIDataType of each output"),
          Arg("in_types", ArgType.ANY, doc="DALIDataType of each input"),
          Arg("outs_ndim", ArgType.INT_LIST, doc="dimensions of each output's samples"),
          Arg("ins_ndim", ArgType.INT_LIST, doc="dimensions of each input's samples"),
          Arg("setup_fn", ArgType.CALLABLE, optional=True,
              doc="setup_fn(outs, ins): writes outs[o][s], the shape of output o's sample s, once a batch"),
          Arg("batch_processing", ArgType.BOOL, False, "run_fn takes lists of every sample's arrays (CPU only)"),
          Arg("blocks", ArgType.INT_LIST, optional=True, doc="GPU: the grid of each sample's launch (3 numbers)"),
          Arg("threads_per_block", ArgType.INT_LIST, optional=True,
              doc="GPU: the block of each sample's launch (3 numbers)")],
    min_inputs=1, max_inputs=MAX_IO, num_outputs=lambda a: len(_as_list(a["out_types"])), devices=("cpu", "gpu"),
    no_prune=True, internal=True)


def _as_list(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _check(op: str, in_types: list, ins_ndim: list, out_types: list, outs_ndim: list, setup_fn: Any,
           device: str, batch_processing: bool, blocks: Any, threads: Any) -> None:
    """DALI's checks of the declaration, with its rules."""
    if len(in_types) != len(ins_ndim):
        raise ValueError(f"{op}: the numbers of input types ({len(in_types)}) and input dimensions ({len(ins_ndim)}) "
                         "differ")
    if len(out_types) != len(outs_ndim):
        raise ValueError(f"{op}: the numbers of output types ({len(out_types)}) and output dimensions "
                         f"({len(outs_ndim)}) differ")
    if len(in_types) > MAX_IO or len(out_types) > MAX_IO:
        raise ValueError(f"{op}: at most {MAX_IO} inputs and {MAX_IO} outputs")
    if any(d < 0 for d in list(ins_ndim) + list(outs_ndim)):
        raise ValueError(f"{op}: numbers of dimensions must not be negative")
    if setup_fn is None and [DALIDataType(t) for t in out_types] != [DALIDataType(t) for t in in_types]:
        # DALI then gives output i input i's type whatever out_types says, and run_fn writes the
        # declared type into it: refused here rather than reinterpreted
        raise ValueError(f"{op}: without setup_fn, output i has input i's shape and type: out_types {out_types} "
                         f"must equal in_types {in_types}")
    for t in list(in_types) + list(out_types):
        to_numpy_type(DALIDataType(t))
        if DALIDataType(t) == DALIDataType.FLOAT16:
            raise NotImplementedError(f"{op}: float16 is not supported (Numba has no float16 arrays)")
    if device == "gpu":
        if batch_processing:
            raise NotImplementedError(f"{op}: batch_processing is not supported on the GPU")
        for name, dims in (("blocks", blocks), ("threads_per_block", threads)):
            if dims is None or len(dims) != 3 or any(d <= 0 for d in dims):
                raise ValueError(f"{op}: the GPU kernel needs {name} as 3 positive numbers, got {dims!r}")


# ---- the CPU driver: one nopython-mode function looping over the batch ----------------------------

def _views(prefix: str, k: int, ndim: int, batch: bool) -> str:
    """Source of sample s's view (or the list of every sample's) of batch ``prefix``k: its buffer
    ``{prefix}b{k}``, shapes ``{prefix}s{k}`` and element offsets ``{prefix}o{k}``."""
    shape = "(" + "".join(f"{prefix}s{k}[s, {d}], " for d in range(ndim)) + ")"
    one = f"{prefix}b{k}[{prefix}o{k}[s]:{prefix}o{k}[s] + {prefix}v{k}[s]].reshape({shape})"
    return f"[{one} for s in range(n)]" if batch else one


@functools.lru_cache(maxsize=None)
def _driver(run_fn: Callable, n_out: int, outs_ndim: tuple, n_in: int, ins_ndim: tuple, batch: bool) -> Callable:
    """A nopython-mode function of every batch's buffer, shapes, offsets and volumes, calling
    ``run_fn`` on each sample's views (or once, on lists of them)."""
    params = [f"{p}{x}{k}" for p, count in (("o", n_out), ("i", n_in)) for k in range(count) for x in "bsov"]
    views = [_views("o", k, outs_ndim[k], batch) for k in range(n_out)] + \
            [_views("i", k, ins_ndim[k], batch) for k in range(n_in)]
    call = f"run_fn({', '.join(views)})"
    body = f"    {call}\n" if batch else f"    for s in range(n):\n        {call}\n"
    source = f"def driver(n, {', '.join(params)}):\n{body}"
    scope = {"run_fn": numba.njit(run_fn)}
    name = f"<numba_function driver of {getattr(run_fn, '__name__', 'run_fn')}>"
    exec(compile(source, name, "exec"), scope)  # noqa: S102 - our own generated source
    return numba.njit(nogil=True)(scope["driver"])


@functools.lru_cache(maxsize=None)
def _setup_driver(setup_fn: Callable, n_out: int, n_in: int) -> Callable:
    """A nopython-mode function of the shape arrays ([N, ndim] each) calling ``setup_fn(outs, ins)``
    with outs[o][s] and ins[i][s] the rows (outs' writable)."""
    def rows(prefix: str, count: int) -> str:
        return "[" + "".join(f"[{prefix}{k}[s] for s in range(n)], " for k in range(count)) + "]"
    params = [f"o{k}" for k in range(n_out)] + [f"i{k}" for k in range(n_in)]
    source = textwrap.dedent(f"""\
        def setup(n, {', '.join(params)}):
            setup_fn({rows("o", n_out)}, {rows("i", n_in)})
        """)
    scope = {"setup_fn": numba.njit(setup_fn)}
    exec(compile(source, "<numba_function setup driver>", "exec"), scope)  # noqa: S102
    return numba.njit(nogil=True)(scope["setup"])


class NumbaFunctionKernel(Operator):
    """The operator on both devices (``self.device``)."""

    @property
    def runs_python(self) -> bool:
        """The GPU kernel's launches are Python calls (the CPU driver runs without the GIL)."""
        return self.device == "gpu"

    def setup(self) -> None:
        a = self.args
        self.in_types = [DALIDataType(t) for t in _as_list(a["in_types"])]
        self.out_types = [DALIDataType(t) for t in _as_list(a["out_types"])]
        self.ins_ndim, self.outs_ndim = tuple(a["ins_ndim"]), tuple(a["outs_ndim"])
        self.batch = a["batch_processing"]
        if self.device == "cpu":
            self.run_driver = _driver(a["run_fn"], len(self.out_types), self.outs_ndim, len(self.in_types),
                                      self.ins_ndim, self.batch)
        else:
            from numba import cuda
            self.kernel = cuda.jit(a["run_fn"])
            self.grid, self.block = tuple(a["blocks"]), tuple(a["threads_per_block"])
        self.setup_driver = (_setup_driver(a["setup_fn"], len(self.out_types), len(self.in_types))
                             if a["setup_fn"] is not None else None)

    def _check_inputs(self, inputs: list) -> None:
        if len(inputs) != len(self.in_types):
            raise RuntimeError(f"{self.label}: {len(inputs)} inputs given, in_types declares {len(self.in_types)}")
        for i, tl in enumerate(inputs):
            if tl.ndim() != self.ins_ndim[i]:
                raise RuntimeError(f"{self.label}: input {i} has {tl.ndim()} dimensions; ins_ndim[{i}] says "
                                   f"{self.ins_ndim[i]}")
            if tl.dtype != self.in_types[i]:
                raise RuntimeError(f"{self.label}: input {i} is {tl.dtype.name}; in_types[{i}] says "
                                   f"{self.in_types[i].name}")

    def _output_shapes(self, inputs: list, n: int) -> list[np.ndarray]:
        if self.setup_driver is None:
            return [inputs[o]._shapes.copy() for o in range(len(self.out_types))]
        outs = [np.zeros((n, d), np.int64) for d in self.outs_ndim]
        self.setup_driver(n, *outs, *[np.ascontiguousarray(tl._shapes) for tl in inputs])
        for o, shapes in enumerate(outs):
            if (shapes < 0).any():
                raise RuntimeError(f"{self.label}: setup_fn gave output {o} a negative extent: "
                                   f"{shapes[(shapes < 0).any(1)][0].tolist()}")
        return outs

    def run(self, ws: Any) -> list:
        inputs = list(ws.inputs)
        self._check_inputs(inputs)
        n = len(inputs[0])
        infos = inputs[0]._source_info
        outputs = [ws.new_batch(shapes, to_numpy_type(t), "", infos)
                   for shapes, t in zip(self._output_shapes(inputs, n), self.out_types)]
        if self.device == "cpu":
            self.run_driver(n, *[x for tl in outputs + inputs for x in _parts(tl)])
        else:
            self._launch(ws, outputs, inputs, n)
        return outputs

    def _launch(self, ws: Any, outputs: list, inputs: list, n: int) -> None:
        """One launch per sample on the pipeline's stream (the kernel's grid is per sample)."""
        from numba import cuda
        stream = cuda.external_stream(ws.stream.ptr)
        launch = self.kernel[self.grid, self.block, stream]
        # sync=False: the launches queue on the stream that produced the inputs, ordered already
        views = [[cuda.as_cuda_array(tl._sample_array(s), sync=False) for tl in outputs + inputs] for s in range(n)]
        for args in views:
            launch(*args)


def _parts(tl: Any) -> tuple:
    """A host batch's buffer, shapes, element offsets and volumes, as the driver takes them."""
    return (tl._buf, np.ascontiguousarray(tl._shapes, np.int64), np.ascontiguousarray(tl._offsets, np.int64),
            tl._volumes().astype(np.int64))


register(NUMBA_FUNCTION, ("cpu", "gpu"))(NumbaFunctionKernel)


class NumbaFunction(_generate.OpsBase):
    """``NumbaFunction(run_fn, out_types, in_types, outs_ndim, ins_ndim, setup_fn=None, device="cpu",
    batch_processing=False, blocks=None, threads_per_block=None)``; called on DataNodes in a pipeline."""
    schema = NUMBA_FUNCTION

    def __init__(self, run_fn: Callable, out_types: Any, in_types: Any, outs_ndim: Any, ins_ndim: Any,
                 setup_fn: Callable | None = None, device: str = "cpu", batch_processing: bool = False,
                 blocks: Sequence[int] | None = None, threads_per_block: Sequence[int] | None = None, **kwargs: Any):
        out_types, in_types, outs_ndim, ins_ndim = map(_as_list, (out_types, in_types, outs_ndim, ins_ndim))
        _check("NumbaFunction", in_types, ins_ndim, out_types, outs_ndim, setup_fn, device, batch_processing, blocks,
               threads_per_block)
        super().__init__(device=device, run_fn=run_fn, out_types=out_types, in_types=in_types, outs_ndim=outs_ndim,
                         ins_ndim=ins_ndim, setup_fn=setup_fn, batch_processing=batch_processing, blocks=blocks,
                         threads_per_block=threads_per_block, **kwargs)

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        if _current.current_pipeline() is None:
            raise RuntimeError("NumbaFunction: a pipeline must be current (inside a @pipeline_def function)")
        for i, x in enumerate(inputs):
            if not isinstance(x, DataNode):
                raise TypeError(f"NumbaFunction: input {i} is {type(x).__name__}, not a DataNode (Numba operators "
                                "take no multiple input sets)")
        return super().__call__(*inputs, **kwargs)


def numba_function(*inputs: DataNode, run_fn: Callable, out_types: Any, in_types: Any, outs_ndim: Any,
                   ins_ndim: Any, setup_fn: Callable | None = None, device: str = "cpu",
                   batch_processing: bool = False, blocks: Sequence[int] | None = None,
                   threads_per_block: Sequence[int] | None = None, **kwargs: Any) -> Any:
    """The functional form of NumbaFunction: ``fn.numba_function(x, run_fn=..., out_types=[...], ...)``."""
    return NumbaFunction(run_fn, out_types, in_types, outs_ndim, ins_ndim, setup_fn, device, batch_processing,
                         blocks, threads_per_block, **kwargs)(*inputs)


from . import experimental, fn  # noqa: E402,F401  (the submodules DALI's plugin has)

__all__ = ["NumbaFunction", "numba_function", "fn", "experimental"]
