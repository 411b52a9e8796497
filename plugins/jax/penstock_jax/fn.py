"""``penstock.plugin.jax.fn.jax_function``: a function of ``jax.Array``s as a pipeline operator.

The function receives each input as one ``jax.Array`` holding the whole batch (the batch is the
leading axis, so samples must share a shape) and returns one array per output likewise; it may be
jitted or vmapped. On the CPU the arrays share the batches' memory through DLPack; on the GPU too,
with JAX's work ordered after the pipeline's stream and the pipeline's after JAX's, without the
host waiting.
"""
from __future__ import annotations

import functools
import sys
from typing import Any, Callable, Sequence

import jax
import jax.dlpack
import numpy as np

from penstock._registry import Arg, ArgType, register, register_kernel
from penstock.data_node import DataNode
from penstock.operators import python_function as _pf

# `import penstock.plugin.jax.fn` must find this module, not load a second copy of it
sys.modules.setdefault("penstock.plugin.jax.fn", sys.modules[__name__])

JAX_FUNCTION = _pf.make_schema(
    "JaxFunction", "Runs a function of jax.Arrays on whole batches (the batch is the leading axis).", True,
    [Arg("sharding", ArgType.ANY, optional=True, doc="a jax.sharding.Sharding: the arrays are global ones "
                                                    "(one local device)")], internal=True)
JAX_FUNCTION.no_prune = False  # kept by its preserve argument (True unless the caller says otherwise)


def _local(array: Any) -> Any:
    """This process's part of a (possibly global) jax.Array."""
    if isinstance(array, jax.Array) and len(array.addressable_shards) == 1 and array.sharding.num_devices > 1:
        return array.addressable_data(0)
    return array


class _JaxFlavor(_pf.Flavor):
    def host_out(self, obj: Any) -> np.ndarray:
        return np.asarray(_local(obj))

    def device_out(self, obj: Any) -> Any:
        import cupy
        return cupy.from_dlpack(_local(obj))  # the pipeline's stream (current) is ordered after JAX's work


@register(JAX_FUNCTION)
class JaxFunctionCPU(_pf.PythonFunctionCPU):
    flavor = _JaxFlavor()

    def setup(self) -> None:
        super().setup()
        self.sharding = self.args["sharding"]
        if self.sharding is not None and len(self.sharding.addressable_devices) != 1:
            raise NotImplementedError(f"{self.label}: a sharding over {len(self.sharding.addressable_devices)} local "
                                      "devices; jax_function takes global shardings with one device per process")

    def run(self, ws: Any) -> list:
        self._input_layouts = [tl._layout for tl in ws.inputs]
        return super().run(ws)

    def _views(self, tl: Any) -> Any:
        """The whole batch as one jax.Array sharing its memory."""
        if not tl.is_dense_tensor():
            raise RuntimeError(f"{self.label}: a jax.Array holds a batch of samples of one shape; this batch has "
                               f"shapes {tl.shape()[:4]}...")
        array = jax.dlpack.from_dlpack(self._dense_view(tl))
        if self.sharding is None:
            return array
        shape = (array.shape[0] * jax.process_count(),) + array.shape[1:]
        return jax.make_array_from_single_device_arrays(shape, self.sharding, [array])

    def _dense_view(self, tl: Any) -> Any:
        return tl.as_array()

    def _with_layout(self, tl: Any, o: int, objs: Sequence[Any] = ()) -> Any:
        if not self.layouts[o] and o < len(self._input_layouts) and len(self._input_layouts[o]) == tl.ndim():
            tl._layout = self._input_layouts[o]  # an output of the input's rank keeps its layout
        return super()._with_layout(tl, o, objs)


@register_kernel(JAX_FUNCTION.name, "gpu")
class JaxFunctionGPU(_pf.GPUKernelMixin, JaxFunctionCPU):
    def _views(self, tl: Any) -> Any:
        return JaxFunctionCPU._views(self, tl)

    def _dense_view(self, tl: Any) -> Any:
        return tl.as_tensor()  # exported through DLPack ordered after the pipeline's stream


def jax_function(function: Callable | None = None, num_outputs: int = 1, output_layouts: Any = None,
                 sharding: Any = None, device: str | None = None, preserve: bool = True) -> Callable:
    """Turns ``function`` (of jax.Arrays, each a whole batch) into a function of DataNodes adding it
    to the current pipeline; usable as ``@jax_function`` or ``@jax_function(num_outputs=2)``.

    ``num_outputs``: arrays returned (a tuple when more than one; 0: returns None).
    ``output_layouts``: one layout for every output or one per output (sample dimensions only); by
    default an output of its input's rank keeps that input's layout. ``sharding``: the arrays are
    global ``jax.Array``s of it (one local device). ``device``: "cpu" or "gpu"; by default the
    inputs' (the GPU if any input is there). ``preserve=False`` lets the pipeline prune it when its
    outputs are unused."""
    if device not in (None, "cpu", "gpu"):
        raise ValueError(f"jax_function: device must be 'cpu', 'gpu' or None, got {device!r}")

    def decorate(func: Callable) -> Callable:
        @functools.wraps(func)
        def operator(*inputs: DataNode) -> Any:
            where = device or ("gpu" if any(isinstance(x, DataNode) and x.device == "gpu" for x in inputs) else "cpu")
            out = _pf.define(JAX_FUNCTION, inputs, {"function": func, "num_outputs": num_outputs,
                                                    "output_layouts": output_layouts, "sharding": sharding,
                                                    "device": where, "preserve": preserve})
            return tuple(out) if isinstance(out, list) else out  # several outputs: a tuple, as the function's
        return operator

    return decorate if function is None else decorate(function)


__all__ = ["jax_function"]
