"""Small helpers shared by the operator tests."""
import numpy as np

from penstock import fn, pipeline_def


def _const(d):
    return lambda: d


def run_es(graph, *inputs, layouts=None, **pipe_kwargs):
    """Runs ``graph(*external_sources)`` once. ``inputs``: one list of per-sample arrays per
    source. Returns the tuple of output TensorLists."""
    bs = len(inputs[0])
    layouts = layouts or [None] * len(inputs)

    @pipeline_def(batch_size=bs, num_threads=2, device_id=None, **pipe_kwargs)
    def p():
        srcs = [fn.external_source(source=_const(d), layout=lay) for d, lay in zip(inputs, layouts)]
        out = graph(*srcs)
        return out if isinstance(out, tuple) else (out,)

    return p().run()


def samples(tl):
    return [tl.at(i) for i in range(len(tl))]
