"""The building blocks of automatic augmentations: ``@augmentation``, magnitude bins, and
per-sample selection of one augmentation out of several (with conditionals)."""
from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable, Sequence

from .. import fn, types
from .._conditionals import _scope
from .._conditionals._runtime import if_exp
from ..data_node import DataNode

__all__ = ["Augmentation", "SignedBin", "augmentation", "select", "signed_bin", "require_conditionals"]


def require_conditionals(what: str) -> None:
    if not _scope.enabled():
        raise RuntimeError(f"{what} selects augmentations per sample with conditionals: define the pipeline "
                           "with @pipeline_def(enable_conditionals=True)")


@dataclasses.dataclass(frozen=True)
class Augmentation:
    """An image operation with a magnitude range: bin ``b`` of ``n`` maps to
    ``lo + (hi - lo) * b / (n - 1)``, negated for a random half of the samples when
    ``randomly_negate``, then turned into the operation's parameter by ``mag_to_param``."""
    op: Callable
    name: str
    mag_range: tuple[float, float] | None = None
    randomly_negate: bool = False
    mag_to_param: Callable | None = None
    param_device: str = "cpu"

    def __post_init__(self) -> None:
        if self.param_device not in ("cpu", "auto"):
            raise NotImplementedError(f"augmentation {self.name}: param_device={self.param_device!r} is not "
                                      "supported; parameters are computed on the CPU ('cpu' or 'auto')")

    def augmentation(self, mag_range: Any = None, randomly_negate: Any = None, mag_to_param: Any = None,
                     param_device: Any = None, name: Any = None) -> "Augmentation":
        """A copy with some settings replaced."""
        changes = {k: v for k, v in (("mag_range", mag_range), ("randomly_negate", randomly_negate),
                                     ("mag_to_param", mag_to_param), ("param_device", param_device),
                                     ("name", name)) if v is not None}
        return dataclasses.replace(self, **changes)

    def magnitude(self, magnitude_bin: Any, num_magnitude_bins: int) -> Any:
        """The magnitude of a bin (an int or a per-sample DataNode)."""
        if self.mag_range is None:
            return None
        lo, hi = self.mag_range
        if num_magnitude_bins < 2:
            raise ValueError(f"augmentation {self.name}: num_magnitude_bins must be at least 2")
        return lo + (hi - lo) * (magnitude_bin / (num_magnitude_bins - 1))

    def _param(self, magnitude_bin: Any, num_magnitude_bins: int, seed: Any) -> Any:
        negate = None
        if isinstance(magnitude_bin, SignedBin):  # the sign drawn once, before a conditional split
            magnitude_bin, negate = magnitude_bin.magnitude_bin, magnitude_bin.random_sign
        mag = self.magnitude(magnitude_bin, num_magnitude_bins)
        if mag is None:
            return None
        if not isinstance(mag, DataNode):
            mag = _scalar(mag)
        if self.randomly_negate:
            if negate is None:
                negate = fn.random.coin_flip(probability=0.5, seed=seed, dtype=types.INT32)
            mag = mag * fn.cast(1 - 2 * negate, dtype=types.FLOAT)
        return self.mag_to_param(mag) if self.mag_to_param is not None else mag

    def __call__(self, data: DataNode, *, magnitude_bin: Any = None, num_magnitude_bins: int | None = None,
                 seed: Any = None, **kwargs: Any) -> DataNode:
        accepted = inspect.signature(self.op).parameters
        extra = {k: v for k, v in kwargs.items() if k in accepted}
        if self.mag_range is None:
            return self.op(data, **extra)
        if magnitude_bin is None or num_magnitude_bins is None:
            raise ValueError(f"augmentation {self.name} needs magnitude_bin and num_magnitude_bins")
        return self.op(data, self._param(magnitude_bin, num_magnitude_bins, seed), **extra)


@dataclasses.dataclass(frozen=True)
class SignedBin:
    """A magnitude bin (an int or a per-sample DataNode) with a per-sample random sign (0 or 1: 1
    negates the magnitude of augmentations that are randomly negated). Indexing takes element
    ``idx`` of both (signs drawn once for a sequence of augmentations)."""
    magnitude_bin: Any
    random_sign: DataNode

    def __getitem__(self, idx: int) -> "SignedBin":
        bin_ = self.magnitude_bin if isinstance(self.magnitude_bin, int) else self.magnitude_bin[idx]
        return SignedBin(bin_, self.random_sign[idx])


def signed_bin(magnitude_bin: Any, random_sign: DataNode | None = None, seed: int | None = None,
               shape: Any = None) -> SignedBin:
    """``magnitude_bin`` with a random sign: ``random_sign`` (a batch of 0/1 ints), else one drawn
    uniformly per sample (of ``shape``, with ``seed``). Drawing the sign before a conditional
    split draws it once for the whole batch rather than once per branch."""
    if not isinstance(magnitude_bin, (int, DataNode)) or isinstance(magnitude_bin, bool):
        raise TypeError(f"signed_bin: magnitude_bin must be an int or a DataNode of ints in [0, num_magnitude_bins), "
                        f"got {magnitude_bin!r}")
    if random_sign is not None and (seed is not None or shape is not None):
        raise ValueError("signed_bin: random_sign cannot be given together with seed or shape")
    if random_sign is None:
        kwargs = {k: v for k, v in (("seed", seed), ("shape", shape)) if v is not None}
        random_sign = fn.random.uniform(values=[0, 1], dtype=types.INT32, **kwargs)
    return SignedBin(magnitude_bin, random_sign)


def _scalar(value: float) -> DataNode:
    return fn.constant(fdata=[float(value)], shape=[], dtype=types.FLOAT)


def augmentation(function: Callable | None = None, *, mag_range: Any = None, randomly_negate: Any = None,
                 mag_to_param: Any = None, param_device: Any = None, name: Any = None,
                 augmentation_cls: Any = None) -> Any:
    """Decorator: turns ``function(data, param, **kwargs)`` (or ``function(data, **kwargs)`` without
    a magnitude) into an :class:`Augmentation`."""
    cls = augmentation_cls or Augmentation

    def decorate(func: Callable) -> Augmentation:
        return cls(op=func, name=name or func.__name__,
                   mag_range=tuple(mag_range) if mag_range is not None else None,
                   randomly_negate=bool(randomly_negate), mag_to_param=mag_to_param,
                   param_device=param_device or "cpu")

    return decorate(function) if function is not None else decorate


def select(augmentations: Sequence[Callable[[DataNode], DataNode]], op_idx: DataNode, data: DataNode) -> DataNode:
    """Per sample, applies ``augmentations[op_idx]`` (callables of the data): a balanced tree of
    conditionals, so each sample goes through log2(len) splits and exactly one augmentation."""
    if len(augmentations) == 1:
        return augmentations[0](data)
    mid = len(augmentations) // 2
    return if_exp(op_idx < mid, lambda: select(augmentations[:mid], op_idx, data),
                  lambda: select(augmentations[mid:], op_idx - mid, data))
