"""Runs one pipeline on penstock and on NVIDIA DALI 2.4 and says how the results differ.

A case is a graph function ``graph(lib, *inputs)`` (``lib`` is ``penstock`` or ``nvidia.dali``)
plus the arrays its external sources give. Both results are compared: outputs (dtype, layout,
per-sample shapes and values, within a tolerance), or, when a library raises, whether ours is
catchable as DALI's exception class. Random operators are compared by dtype, layout and shapes.
"""
from __future__ import annotations

import builtins
import dataclasses
import importlib.util
import io
import os
import re
import sys
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from make_sample_data import photo_like  # noqa: E402

HAVE_DALI = importlib.util.find_spec("nvidia") is not None and importlib.util.find_spec("nvidia.dali") is not None
TALLY = {"cases": 0, "differ": 0, "known": 0}   # filled by the tests, printed by conftest

BUILTIN_ERRORS = (KeyError, TypeError, ValueError, IndexError, NotImplementedError, RuntimeError)


class T:
    """An enum value of ``lib.types`` (DALIDataType, DALIImageType ...) named the same in both."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"types.{self.name}"

    def resolve(self, lib: Any) -> Any:
        return getattr(lib.types, self.name)


def resolve(lib: Any, value: Any) -> Any:
    if isinstance(value, T):
        return value.resolve(lib)
    if isinstance(value, dict):
        return {k: resolve(lib, v) for k, v in value.items()}
    return value


def _images() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    return [photo_like(rng, 24, 32), photo_like(rng, 21, 30)]


def _jpegs() -> list[np.ndarray]:
    from PIL import Image
    out = []
    for img in _images():
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="JPEG", quality=90)
        out.append(np.frombuffer(buf.getvalue(), np.uint8))
    return out


def _npy_files() -> list[np.ndarray]:
    """.npy files (a C-order float array, a Fortran-order one) as bytes."""
    out = []
    for a in (np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4), np.asfortranarray(
            np.linspace(250, -7, 10, dtype=np.float32).reshape(2, 5))):
        buf = io.BytesIO()
        np.save(buf, a)
        out.append(np.frombuffer(buf.getvalue(), np.uint8))
    return out


def _file_paths() -> list[np.ndarray]:
    """Two small files (written once), each path as the int8 array of its UTF-8 bytes."""
    root = os.path.join(os.environ.get("TMPDIR", "/tmp"), "penstock_differential_files")
    os.makedirs(root, exist_ok=True)
    paths = []
    for name, content in (("text.txt", b"penstock and DALI\n"), ("bytes.bin", bytes(range(256)) * 3)):
        path = os.path.join(root, name)
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(content)
        paths.append(np.frombuffer(path.encode(), np.int8))
    return paths


def _wavs() -> list[np.ndarray]:
    """16-bit WAV files (mono 16 kHz, stereo 22.05 kHz) as bytes."""
    import wave
    out = []
    for channels, rate, frames in ((1, 16000, 800), (2, 22050, 1000)):
        t = np.arange(frames * channels) / (rate * channels)
        pcm = (8000 * np.sin(2 * np.pi * 440 * t)).astype("<i2")
        buf = io.BytesIO()
        with wave.open(buf, "wb") as w:
            w.setnchannels(channels)
            w.setsampwidth(2)
            w.setframerate(rate)
            w.writeframes(pcm.tobytes())
        out.append(np.frombuffer(buf.getvalue(), np.uint8))
    return out


def video_file(name: str, codec: str, frames: int, height: int, width: int, seed: int, container: str = "webm",
               vfr: bool = False) -> str:
    """A natural-motion clip (examples/make_video_data.py) written once to a shared temporary
    folder: penstock and the DALI process read the same bytes (encoders need not be deterministic)."""
    import tempfile
    from make_video_data import encode, natural_motion, variable_pts
    folder = os.path.join(tempfile.gettempdir(), "penstock-differential-videos")
    path = os.path.join(folder, f"{name}.{container}")
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        data = encode(natural_motion(frames, height, width, seed=seed), codec, container,
                      pts=variable_pts(frames, seed) if vfr else None, gop=8)
        partial = f"{path}.{os.getpid()}"
        with open(partial, "wb") as f:
            f.write(data)
        os.replace(partial, path)
    return path


def _videos() -> list[np.ndarray]:
    """A VP9 and an MJPEG clip (codecs DALI 2.4's CPU decodes), as bytes."""
    paths = [video_file("vp9_a", "vp9", 12, 32, 48, 1), video_file("mjpeg_b", "mjpeg", 9, 24, 40, 2, "avi")]
    return [np.fromfile(p, np.uint8) for p in paths]


# input kinds: the arrays of one external source and its layout
INPUTS: dict[str, Callable[[], tuple[list[np.ndarray], str | None]]] = {
    "images": lambda: (_images(), "HWC"),
    "bayer": lambda: ([np.ascontiguousarray(im[:20, :, 1]) for im in _images()], "HW"),
    "jpegs": lambda: (_jpegs(), None),
    "npy_files": lambda: (_npy_files()[:1] * 2, None),
    "floats": lambda: ([np.linspace(-2, 3, 24, dtype=np.float32).reshape(4, 6),
                        np.linspace(5, -1, 24, dtype=np.float32).reshape(4, 6)], None),
    "boxes": lambda: ([np.array([[0.1, 0.2, 0.5, 0.6], [0.0, 0.0, 0.2, 0.1]], np.float32)] * 2, None),
    "box_labels": lambda: ([np.array([3, 7], np.int32)] * 2, None),
    "shape_vectors": lambda: ([np.array([100, 80, 3], np.int64), np.array([50, 60, 3], np.int64)], None),
    "mask_ids": lambda: ([np.array([2, 0], np.int32), np.array([1], np.int32)], None),
    "polygons": lambda: ([np.array([[0, 0, 3], [1, 3, 7], [2, 7, 10]], np.int32)] * 2, None),
    "vertices": lambda: ([np.arange(20, dtype=np.float32).reshape(10, 2)] * 2, None),
    "matrices": lambda: ([np.array([[1, 0, 2], [0, 1, 3]], np.float32)] * 2, None),
    "filters": lambda: ([np.array([[0, 0.25, 0], [0.25, 0.5, 0.25], [0, -0.25, 0]], np.float32),
                         np.array([[0.5, -0.5, 1.0], [0, 1, 0], [0.25, 0, 0]], np.float32)], None),
    "scalar_n": lambda: ([np.array(5, np.int32)] * 2, None),
    # shape corners (tests/differential/_corners.py)
    "unit_dims": lambda: ([np.arange(3, dtype=np.int32).reshape(1, 3, 1),
                           np.arange(5, dtype=np.int32).reshape(1, 5, 1)], "ABC"),
    "unit_dims_plain": lambda: ([np.arange(3, dtype=np.int32).reshape(3, 1)] * 2, None),
    "empty_rows": lambda: ([np.zeros((0, 1), np.int32), np.ones((2, 1), np.int32)], "HC"),
    "empty_volume": lambda: ([np.zeros((0, 0, 1), np.int32)] * 2, "ABC"),
    "scalars": lambda: ([np.array(2.5, np.float32), np.array(-1.0, np.float32)], None),
    "small_images": lambda: ([np.arange(4 * 5 * 3, dtype=np.int32).reshape(4, 5, 3),
                              np.arange(6 * 7 * 3, dtype=np.int32).reshape(6, 7, 3)], "HWC"),
    "planar": lambda: ([np.arange(3 * 24 * 32, dtype=np.int32).reshape(3, 24, 32)] * 2, "CHW"),
    "file_paths": lambda: (_file_paths(), None),
    # audio: encoded files, 1-D signals, power spectrograms (frequency x time)
    "wavs": lambda: (_wavs(), None),
    # video: encoded clips, and frame sequences
    "videos": lambda: (_videos(), None),
    "sequences": lambda: ([np.arange(3 * 4 * 5 * 3, dtype=np.uint8).reshape(3, 4, 5, 3),
                           np.arange(2 * 6 * 4 * 3, dtype=np.uint8).reshape(2, 6, 4, 3)], "FHWC"),
    "signals": lambda: ([np.sin(np.arange(3000, dtype=np.float32) * 0.05), np.cos(np.arange(1500, dtype=np.float32))],
                        None),
    "spectra": lambda: ([np.linspace(0.01, 2, 257 * 6, dtype=np.float32).reshape(257, 6),
                         np.linspace(3, 0.01, 257 * 4, dtype=np.float32).reshape(257, 4)], "ft"),
}


@dataclasses.dataclass
class Outcome:
    error: BaseException | None = None   # (penstock's own, in process)
    error_class: str | None = None       # the exception class of builtins that catches it, e.g. "RuntimeError"
    message: str = ""
    text: str = ""                       # the whole message
    outputs: list | None = None          # per output: (dtype name, layout, [samples])
    crashed: bool = False                # the process running it died (DALI's crashes on some bad arguments)


def _const(d: list) -> Callable[[], list]:
    return lambda: d  # no parameter: a one-parameter callable would be given the batch info


def run(lib: Any, graph: Callable, inputs: list[str], batch_size: int = 2, device_id: int | None = None,
        iterations: int = 1) -> Outcome:
    """The outputs of ``iterations`` runs, each output's samples of every run in turn."""
    data = [INPUTS[k]() for k in inputs]

    @lib.pipeline_def(batch_size=batch_size, num_threads=1, device_id=device_id, seed=7, prefetch_queue_depth=1)
    def pipe():
        nodes = [lib.fn.external_source(source=_const(d), layout=lay) for d, lay in data]
        out = graph(lib, *nodes)
        return tuple(out) if isinstance(out, (tuple, list)) else out

    try:
        p = pipe()
        p.build()
        runs = [p.run() for _ in range(iterations)]
        outs = runs[0]
        return Outcome(outputs=[(getattr(o.dtype, "name", str(o.dtype)).split(".")[-1], o.layout(),
                                 [np.array(r[k][i]) for r in runs for i in range(len(r[k]))])
                                for k, o in enumerate(outs)])
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        cls = next(c for c in type(e).__mro__ if c in BUILTIN_ERRORS or c is Exception)
        return Outcome(error=e, error_class=cls.__name__, message=_first_line(e), text=str(e))


def _run_dali(case: Any) -> Outcome:
    import nvidia.dali as dali
    outcome = run(dali, case.graph, case.inputs, getattr(case, "batch_size", 2), getattr(case, "device_id", None),
                  getattr(case, "iterations", 1))
    outcome.error = None  # DALI's exception objects do not cross processes; class and message do
    return outcome


_POOL: list = []


def run_dali(case: Any, runner: Callable[[Any], Outcome] = _run_dali) -> Outcome:
    """``runner(case)`` (by default: ``case`` on DALI) in a worker process, so that a DALI crash is
    an outcome, not the end of the run. ``runner`` must be importable by name from this directory."""
    import concurrent.futures
    import multiprocessing
    if not _POOL:
        here = os.path.dirname(os.path.abspath(__file__))
        os.environ["PYTHONPATH"] = os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])
        _POOL.append(concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")))
    try:
        return _POOL[0].submit(runner, case).result(timeout=120)
    except concurrent.futures.process.BrokenProcessPool:
        _POOL.pop().shutdown(wait=False)
        return Outcome(crashed=True, message="the DALI process crashed")


def compare(ours: Outcome, theirs: Outcome, random: bool = False, tolerance: float = 1.0,
            text: bool = False) -> str | None:
    """None when the outcomes agree, else what differs; ``text``: an error must carry DALI's words too."""
    if theirs.crashed:
        return None if ours.error is not None else "DALI crashes; penstock accepts it"
    if theirs.error_class is not None or ours.error is not None:
        if ours.error is None:
            return f"DALI raises {theirs.error_class}: {theirs.message}; penstock does not"
        if theirs.error_class is None:
            return f"penstock raises {type(ours.error).__name__}: {ours.message}; DALI does not"
        want = getattr(builtins, theirs.error_class)
        if not isinstance(ours.error, want):
            return (f"DALI raises {want.__name__} ({theirs.message}), penstock {type(ours.error).__name__} "
                    f"({ours.message}), which `except {want.__name__}` misses")
        words = dali_words(theirs.text)
        if text and _squeezed(words) not in _squeezed(ours.text):
            return f"penstock's error lacks DALI's words {words!r}: {ours.text!r}"
        return None
    if len(ours.outputs) != len(theirs.outputs):
        return f"{len(ours.outputs)} outputs, DALI {len(theirs.outputs)}"
    for k, ((dt_a, lay_a, a), (dt_b, lay_b, b)) in enumerate(zip(ours.outputs, theirs.outputs)):
        if dt_a != dt_b:
            return f"output {k}: dtype {dt_a}, DALI {dt_b}"
        if lay_a != lay_b:
            return f"output {k}: layout '{lay_a}', DALI '{lay_b}'"
        for i, (x, y) in enumerate(zip(a, b)):
            if random:  # different draws: only the kind of result can be compared
                if x.ndim != y.ndim:
                    return f"output {k} sample {i}: {x.ndim}-D, DALI {y.ndim}-D"
                continue
            if x.shape != y.shape:
                return f"output {k} sample {i}: shape {x.shape}, DALI {y.shape}"
            if x.size == 0:
                continue
            if x.dtype.kind in "fc":
                bad = ~np.isclose(x, y, rtol=1e-3, atol=1e-3 * tolerance, equal_nan=True)
            elif x.dtype.kind == "b":
                bad = x != y
            else:
                bad = np.abs(x.astype(np.float64) - y.astype(np.float64)) > tolerance
            if bad.any():
                diff = np.abs(x.astype(np.float64) - y.astype(np.float64))
                return (f"output {k} sample {i}: {int(bad.sum())} of {x.size} values differ "
                        f"(max {np.where(np.isnan(diff), np.inf, diff).max():.4g})")
    return None


def _first_line(e: BaseException) -> str:
    # DALI's messages wrap the cause in a traceback of the pipeline definition and C++ context
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip() and not ln.startswith(" ")]
    useful = [ln for ln in lines if not ln.startswith(("Critical error", "Error in", "which was", "encountered",
                                                        "C++ context", "Current pipeline", "Traceback"))]
    return (useful or lines or [""])[0][:160]


def dali_words(message: str) -> str:
    """What DALI's error message says of the problem, as code written for DALI matches it: past the
    wrapping (the operator's traceback, an 'Assert on "..." failed:' prefix), up to the C++ context,
    its first sentence."""
    cause = message.split("encountered:\n", 1)[-1].split("\nC++ context", 1)[0].split("\n\nAt:", 1)[0].strip()
    cause = re.sub(r'^(Assert on ".*?" failed: |DLTensorPythonFunction error: (\w+: )?)', "", cause)
    return re.split(r"(?<=\.)\s", cause, maxsplit=1)[0]


def _squeezed(text: str) -> str:
    """The words of a text, for comparing messages whatever their quoting and punctuation."""
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text.lower()).split())


def settle(name: str, reason: str | None, diff: str | None) -> None:
    """Settles one compared case against known_differences (``reason``: its listed reason, if
    any): agreeing is a pass (a listed case that agrees now fails, so the list stays true), a
    listed difference an expected failure, any other difference a failure."""
    import pytest
    TALLY["cases"] += 1
    if diff is None:
        if reason:
            pytest.fail(f"{name} agrees with DALI now: remove it from known_differences.py")
        return
    TALLY["differ"] += 1
    if reason:
        TALLY["known"] += 1
        pytest.xfail(f"{reason}: {diff}")
    pytest.fail(f"{name}: {diff}")


def check_case(case: Any) -> None:
    """Runs ``case`` on penstock and DALI and settles it."""
    import penstock
    from known_differences import INTENDED, OPEN
    ours = run(penstock, case.graph, list(case.inputs), getattr(case, "batch_size", 2), getattr(case, "device_id", None),
               getattr(case, "iterations", 1))
    theirs = run_dali(case)
    diff = compare(ours, theirs, random=case.random, tolerance=case.tolerance, text=getattr(case, "text", False))
    words = getattr(case, "words", None)  # a phrase both errors must hold (what DALI's own tests match)
    if diff is None and words and not (words in theirs.text and words in ours.text):
        diff = f"the words {words!r} are not in both errors: DALI {theirs.text!r}, penstock {ours.text!r}"
    settle(case.id, INTENDED.get(case.id) or OPEN.get(case.id), diff)
