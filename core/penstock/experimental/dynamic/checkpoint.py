"""Checkpoints of the dynamic mode: ``Checkpoint`` gathers the states of readers and
``random.RNG``s under names, to save and resume a run; ``current()`` is the current
``EvalContext``'s."""
from ._checkpoint import Checkpoint
from ._eval_context import EvalContext

__all__ = ["Checkpoint", "current"]


def current() -> Checkpoint:
    """The checkpoint of the current ``EvalContext``."""
    return EvalContext.current().checkpoint
