"""A reader's samples, batch by batch, for the tests that compare one reader over the same files in two
places (local disk and an object store): its pipeline, its rows of outputs, and their comparison."""
from __future__ import annotations

from typing import Callable

import numpy as np

from penstock import pipeline_def


def reader_pipeline(reader: Callable, batch_size: int = 2, checkpoint=None, **kwargs):
    """A built pipeline of ``reader`` (an ``fn`` reader) named "r", with checkpointing on."""
    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=12, enable_checkpointing=True,
                  checkpoint=checkpoint)
    def pipe():
        out = reader(name="r", **kwargs)
        return tuple(out) if isinstance(out, (list, tuple)) else out
    p = pipe()
    p.build()
    return p


def rows(p, iterations: int) -> list[list]:
    """Each sample of ``iterations`` batches: its outputs (arrays), then its first output's source_info."""
    out = []
    for _ in range(iterations):
        outs = p.run()
        out += [[np.array(o.at(i)) for o in outs] + [outs[0].source_info(i)] for i in range(len(outs[0]))]
    return out


def assert_same_rows(got: list, expected: list, local: str = "", url: str = "") -> None:
    """The same outputs (types, shapes, values) in the same order, the sources naming ``url`` where the
    expected ones name ``local``."""
    assert [g[-1] for g in got] == [e[-1].replace(local, url) if local else e[-1] for e in expected]
    for g, e in zip(got, expected):
        assert len(g) == len(e)
        assert all(a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b) for a, b in zip(g[:-1], e[:-1]))


def assert_checkpoint_resumes(reader: Callable, before: int, after: int, **kwargs) -> None:
    """A pipeline restored from the checkpoint of one that ran ``before`` batches gives the ``after``
    batches that one uninterrupted pipeline gives next."""
    reference = rows(reader_pipeline(reader, **kwargs), before + after)
    first = reader_pipeline(reader, **kwargs)
    head = rows(first, before)
    assert_same_rows(head + rows(reader_pipeline(reader, checkpoint=first.checkpoint(), **kwargs), after), reference)
