"""What ``Tensor`` and ``Batch`` share: data that is either there (a penstock batch, one sample for
a Tensor) or the pending result of a call, evaluated when something needs its values."""
from __future__ import annotations

from typing import Any

from ...tensors import TensorListGPU
from . import _call
from ._device import CPU, Device
from ._invocation import DONE, Given, Invocation, Pending
from ._type import DType


class Data:
    """Base of Tensor and Batch: ``_storage`` (a TensorListCPU/GPU) once known, else output
    ``_index`` of the call ``_invocation``."""
    _storage: Any = None
    _invocation: Invocation | None = None
    _index: int = 0
    _external = False  # the storage is a view of the caller's memory

    @classmethod
    def _of_result(cls, invocation: Invocation, index: int) -> Any:
        """Output ``index`` of a recorded call."""
        data = cls.__new__(cls)
        data._set_result(invocation, index)
        return data

    @classmethod
    def _wrap(cls, storage: Any, external: bool = False) -> Any:
        """A penstock batch (one sample for a Tensor) as it is."""
        data = cls.__new__(cls)
        data._set_storage(storage, external)
        return data

    def _set_storage(self, storage: Any, external: bool = False) -> None:
        self._storage, self._external = storage, external

    def _set_result(self, invocation: Invocation, index: int) -> None:
        self._invocation, self._index = invocation, index
        invocation.hold(index, self)

    def _value(self) -> Any:
        """The batch behind this object, evaluating its call (and what that depends on) if needed."""
        if self._storage is None:
            self._storage = self._invocation.value(self._index)
            self._invocation = None
        return self._storage

    def _node(self) -> Any:
        """A DataNode standing for this data in a call being recorded."""
        inv = self._invocation
        if self._storage is not None or inv is None or inv.state is DONE:
            return Given(self._value())
        return Pending(inv, self._index)

    def _is_external(self) -> bool:
        return self._external

    def evaluate(self) -> Any:
        """Computes the data now (errors of the call that makes it are raised here); returns self."""
        self._value()
        return self

    # -- metadata
    @property
    def device(self) -> Device:
        if self._storage is None and self._invocation is not None and self._invocation.state is not DONE:
            out = self._invocation.outputs[self._index]
            return CPU if out.device == "cpu" else Device("gpu", self._invocation.context.device_id)
        storage = self._value()
        return Device("gpu", storage.device_id()) if isinstance(storage, TensorListGPU) else CPU

    @property
    def dtype(self) -> DType:
        return DType.from_type_id(self._value().dtype)

    @property
    def layout(self) -> str | None:
        return self._value()._layout or None

    # -- transfers
    def to_device(self, device: Any, force_copy: bool = False) -> Any:
        """This data on ``device`` (itself when it is there already, unless ``force_copy``)."""
        from ._device import device as as_device
        target = as_device(device)
        if target == self.device:
            return _call.apply(lambda node: _copy(node), self) if force_copy else self
        if target.device_type == "gpu":
            return _call.apply(lambda node: node.gpu(), self)
        return _call.apply(lambda node: node.cpu(), self)

    def cpu(self) -> Any:
        return self.to_device(CPU)

    def gpu(self, index: int | None = None) -> Any:
        return self.to_device(Device("gpu", index))

    # -- arithmetic: element-wise, with DALI's type promotion; a Tensor with a Batch applies to every sample
    def __add__(self, o): return _call.binary("add", self, o)
    def __radd__(self, o): return _call.binary("add", o, self)
    def __sub__(self, o): return _call.binary("sub", self, o)
    def __rsub__(self, o): return _call.binary("sub", o, self)
    def __mul__(self, o): return _call.binary("mul", self, o)
    def __rmul__(self, o): return _call.binary("mul", o, self)
    def __truediv__(self, o): return _call.binary("div", self, o)
    def __rtruediv__(self, o): return _call.binary("div", o, self)
    def __floordiv__(self, o): return _call.binary("floordiv", self, o)
    def __rfloordiv__(self, o): return _call.binary("floordiv", o, self)
    def __mod__(self, o): return _call.binary("mod", self, o)
    def __rmod__(self, o): return _call.binary("mod", o, self)
    def __pow__(self, o): return _call.binary("pow", self, o)
    def __rpow__(self, o): return _call.binary("pow", o, self)
    def __eq__(self, o): return _call.binary("eq", self, o)  # type: ignore[override]
    def __ne__(self, o): return _call.binary("ne", self, o)  # type: ignore[override]
    def __lt__(self, o): return _call.binary("lt", self, o)
    def __le__(self, o): return _call.binary("le", self, o)
    def __gt__(self, o): return _call.binary("gt", self, o)
    def __ge__(self, o): return _call.binary("ge", self, o)
    def __and__(self, o): return _call.binary("bitand", self, o)
    def __rand__(self, o): return _call.binary("bitand", o, self)
    def __or__(self, o): return _call.binary("bitor", self, o)
    def __ror__(self, o): return _call.binary("bitor", o, self)
    def __xor__(self, o): return _call.binary("bitxor", self, o)
    def __rxor__(self, o): return _call.binary("bitxor", o, self)
    def __lshift__(self, o): return _call.binary("shl", self, o)
    def __rlshift__(self, o): return _call.binary("shl", o, self)
    def __rshift__(self, o): return _call.binary("shr", self, o)
    def __rrshift__(self, o): return _call.binary("shr", o, self)
    def __neg__(self): return _call.unary("neg", self)
    def __pos__(self): return self
    def __abs__(self): return _call.unary("abs", self)
    def __invert__(self): return _call.unary("bitnot", self)

    __hash__ = object.__hash__  # __eq__ is element-wise; identity stays the hash


def _copy(node: Any) -> Any:
    from ... import fn
    return fn.copy(node)
