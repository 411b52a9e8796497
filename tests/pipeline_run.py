"""Runs a small penstock pipeline once over given samples (helper for operator tests)."""
import numpy as np

from penstock import fn, pipeline_def


def _constant(data):
    return lambda: data


def run_once(graph, *inputs, layout="HWC"):
    """graph(*nodes) -> output node(s); each input is a list of numpy samples (one batch),
    fed through fn.external_source. Returns a list of outputs, each a list of numpy samples."""
    batch_size = len(inputs[0])

    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=None)
    def pipe():
        nodes = [fn.external_source(source=_constant(data), batch=True,
                                    layout=layout if np.ndim(data[0]) == len(layout) else None)
                 for data in inputs]
        out = graph(*nodes)
        return tuple(out) if isinstance(out, (list, tuple)) else out

    p = pipe()
    p.build()
    outs = p.run()
    return [[np.array(o.at(i)) for i in range(len(o))] for o in outs]
