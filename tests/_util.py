"""Small helpers shared by the operator tests."""
import socket
import subprocess

import numpy as np
import pytest

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


def batches_pipe(batches, batch_size, **kw):
    """A pipeline whose single output (or outputs, with num_outputs) is the given batches, one per
    iteration, on the CPU."""
    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None)
    def pipe():
        out = fn.external_source(source=batches, cycle=False, **kw)
        return tuple(out) if isinstance(out, list) else out
    return pipe()


def record_outputs(pipe):
    """Makes pipe.share_outputs remember what it returned (to compare memory with what a framework got)."""
    seen = []
    original = pipe.share_outputs

    def share_outputs(*args):
        out = original(*args)
        seen.append(out)
        return out

    pipe.share_outputs = share_outputs
    return seen


# A long GPU computation (20 dependent element-wise kernels over 8 x 256k floats): a framework that
# reads its output at once sees final values only if it waits for the pipeline's stream.
SLOW_STEPS = 20


def slow_batches() -> list:
    rng = np.random.default_rng(0)
    return [rng.normal(size=(8, 1 << 18)).astype(np.float32) for _ in range(3)]


def slow_chain(x):
    """On a DataNode (the pipeline's kernels) or a numpy array (the reference), in float32."""
    for _ in range(SLOW_STEPS):
        x = x * np.float32(1.0001) + np.float32(0.5) if isinstance(x, np.ndarray) else x * 1.0001 + 0.5
    return x


def installed_or_skip(name: str):
    """pytest.importorskip that also skips when ``name`` resolves only to a namespace package: tests
    that put examples/ on sys.path make examples/tensorflow importable as ``tensorflow`` where
    TensorFlow itself is absent."""
    module = pytest.importorskip(name)
    if getattr(module, "__file__", None) is None:
        pytest.skip(f"{name} is not installed", allow_module_level=True)
    return module


def chroma_spread_per_block(rgb: np.ndarray) -> np.ndarray:
    """Per 2x2 block of an RGB image, the largest spread of R-G and of B-G inside it: both depend
    only on the chroma (R = Y + 1.402 Cr, G = Y - 0.344 Cb - 0.714 Cr, B = Y + 1.772 Cb), so a block
    that shares one chroma sample has a spread of rounding only."""
    h, w = (rgb.shape[0] // 2) * 2, (rgb.shape[1] // 2) * 2
    px = rgb[:h, :w].astype(np.int32)
    spreads = []
    for diff in (px[..., 0] - px[..., 1], px[..., 2] - px[..., 1]):
        blocks = diff.reshape(h // 2, 2, w // 2, 2).transpose(0, 2, 1, 3).reshape(h // 2, w // 2, 4)
        spreads.append(blocks.max(-1) - blocks.min(-1))
    return np.maximum(*spreads)


def run_together(commands: list, timeout: float, **popen_kwargs) -> list:
    """Starts every command at once (the ranks of one job) and waits for them all: their stdout, in
    order. A process that fails fails the test with its output; none is left running."""
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen_kwargs)
             for c in commands]
    outputs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            assert p.returncode == 0, out[-2000:] + err[-4000:]
            outputs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return outputs


def free_port() -> int:
    """A TCP port free on localhost now (for a job's rendezvous)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_smooth_jpegs(root, per_class: int, shape_of, quality: int = 92) -> str:
    """Smooth photo-like JPEGs in two class folders under ``root`` (a pathlib.Path): picture i of
    class c is ``shape_of(i, c)`` = (height, width). Returns the root as a string."""
    from PIL import Image
    for c in range(2):
        (root / str(c)).mkdir()
        for i in range(per_class):
            h, w = shape_of(i, c)
            y, x, ch = np.mgrid[0:h, 0:w, 0:3]
            px = 128 + 90 * np.sin(x / w * (2 + i) + y / h * 3 + ch) + 30 * np.cos(x * y / (h * w) * 9 + c)
            Image.fromarray(px.clip(0, 255).astype(np.uint8)).save(root / str(c) / f"{i}.jpg", quality=quality)
    return str(root)


def staging_blocks_a_part(monkeypatch) -> list:
    """The number of pinned staging blocks each host part of a mixed decoder takes from now on
    (``_engine.places_in_blocks`` watched for the test's length)."""
    from penstock import _engine
    counts: list = []
    places_in_blocks = _engine.places_in_blocks

    def placing(shapes, block_bytes):
        places, used = places_in_blocks(shapes, block_bytes)
        counts.append(len(used))
        return places, used
    monkeypatch.setattr(_engine, "places_in_blocks", placing)
    return counts
