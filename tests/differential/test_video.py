"""The video operators on penstock and on DALI 2.4 (CPU), on clips the tests encode with the codecs
DALI's CPU backend decodes (VP9, VP8, MJPEG; examples/make_video_data.py): decoders.video's frame
selection and padding, and experimental.readers.video's sequences, labels, frame numbers and
timestamps over filenames, file_root and file_list, constant and variable frame rates, shuffled.
Frames are compared within 2 levels (both convert YUV to RGB with libswscale); frame numbers,
labels and timestamps exactly.

Not compared: codecs DALI's CPU refuses (H.264, HEVC, AV1, MPEG-4): penstock decodes them on the
CPU too (an intended difference, tests/differential/known_differences.py)."""
from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from _harness import (BUILTIN_ERRORS, Outcome, _first_line, compare, resolve, run, run_dali, settle,  # noqa: E402
                      video_file)

pytest.importorskip("av")


@dataclasses.dataclass
class VideoCase:
    id: str
    op: str
    kwargs: dict
    inputs: tuple = ()
    files: tuple = ()             # (kwarg, [video_file args]) of a reader
    batch_size: int = 3
    random: bool = False
    tolerance: float = 2.0

    def graph(self, lib: Any, *nodes: Any) -> Any:
        f = lib.fn
        for part in self.op.split("."):
            f = getattr(f, part)
        kwargs = {k: resolve(lib, v) for k, v in self.kwargs.items()}
        for key, specs in self.files:
            kwargs[key] = [video_file(*spec) for spec in specs]
        out = f(*nodes, **kwargs)
        return tuple(out) if isinstance(out, (list, tuple)) else out


A = ("vp9_a", "vp9", 12, 32, 48, 1)
B = ("mjpeg_b", "mjpeg", 9, 24, 40, 2, "avi")
C = ("vp8_c", "vp8", 20, 32, 32, 3)
VFR = ("vp9_vfr", "vp9", 16, 32, 48, 4, "webm", True)

DECODER_CASES = [
    {}, {"start_frame": 2}, {"start_frame": 1, "end_frame": 8, "stride": 3}, {"sequence_length": 4, "stride": 2},
    {"start_frame": 6, "sequence_length": 6}, {"start_frame": 6, "sequence_length": 6, "pad_mode": "edge"},
    {"start_frame": 6, "sequence_length": 8, "pad_mode": "reflect"},
    {"start_frame": 6, "sequence_length": 8, "pad_mode": "symmetric"},
    {"start_frame": 6, "sequence_length": 8, "fill_value": [9, 99, 199]},
    {"start_frame": 6, "sequence_length": 8, "pad_mode": "none"}, {"frames": [8, 0, 3, 3]},
    {"frames": [1], "start_frame": 2}, {"end_frame": 4, "sequence_length": 2}, {"build_index": False, "frames": [7, 2]},
    {"fill_value": [1, 2]}, {"pad_mode": "wrap"},
]

READER_CASES = [
    ({"sequence_length": 3}, (("filenames", (A, C)),)),
    ({"sequence_length": 3, "labels": [4, 7], "enable_frame_num": True, "enable_timestamps": True},
     (("filenames", (A, C)),)),
    ({"sequence_length": 4, "stride": 2, "step": 3, "enable_frame_num": "sequence"}, (("filenames", (C,)),)),
    ({"sequence_length": 5, "pad_mode": "constant", "enable_frame_num": "sequence", "enable_timestamps": True,
      "labels": [0, 1]}, (("filenames", (A, B)),)),
    ({"sequence_length": 5, "pad_mode": "edge", "enable_frame_num": "sequence", "labels": [0, 1]},
     (("filenames", (A, B)),)),
    ({"sequence_length": 4, "stride": 3, "pad_mode": "reflect", "enable_frame_num": "sequence", "labels": [0, 1]},
     (("filenames", (C, B)),)),
    ({"sequence_length": 7, "uniform_sample": True, "enable_frame_num": "sequence", "labels": [0, 1]},
     (("filenames", (A, B)),)),
    ({"sequence_length": 3, "enable_frame_num": "sequence", "enable_timestamps": True}, (("filenames", (VFR,)),)),
    ({"sequence_length": 2, "random_shuffle": True, "initial_fill": 8, "enable_frame_num": True, "labels": [1, 2]},
     (("filenames", (A, C)),)),
    ({"sequence_length": 2, "labels": []}, (("filenames", (A,)),)),
    ({"sequence_length": 30}, (("filenames", (A,)),)),
    ({"sequence_length": 3, "image_type": "YCbCr"}, (("filenames", (A,)),)),
]


def _cases():
    out = []
    for kw in DECODER_CASES:
        for op in ("decoders.video", "experimental.decoders.video"):
            name = ",".join(f"{k}={v}" for k, v in kw.items())
            out.append(VideoCase(f"{op}[{name}]", op, kw, inputs=("videos",), batch_size=2))
    for kw, files in READER_CASES:
        kw = dict(kw)
        if kw.get("image_type") == "YCbCr":
            from _harness import T
            kw["image_type"] = T("YCbCr")
        name = ",".join(f"{k}={v}" for k, v in kw.items()) + "," + "+".join(s[0] for _, specs in files for s in specs)
        out.append(VideoCase(f"experimental.readers.video[{name}]", "experimental.readers.video", kw, files=files,
                             batch_size=4))
    return out


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c.id)
def test_video(case):
    from known_differences import INTENDED, OPEN
    import penstock
    ours = run(penstock, case.graph, list(case.inputs), case.batch_size)
    theirs = run_dali(case)
    settle(case.id, INTENDED.get(case.id) or OPEN.get(case.id), compare(ours, theirs, tolerance=case.tolerance))


def test_file_list_and_file_root(tmp_path):
    """The reader over a file_list (frames and timestamps, each rounding) and over file_root."""
    import shutil
    from known_differences import INTENDED, OPEN
    import penstock
    a, c = video_file(*A), video_file(*C)
    root = tmp_path / "root"
    for cls, path in (("x", a), ("y", c)):
        (root / cls).mkdir(parents=True)
        shutil.copy(path, root / cls)
    listing = tmp_path / "frames.txt"
    listing.write_text(f"{a} 3 1 9\n{c} 5 -12 -2\n")
    stamps = tmp_path / "stamps.txt"
    stamps.write_text(f"{a} 3 0.05 0.3\n{c} 5 0.1 0.55\n")
    cases = [VideoCase("readers.video[file_root]", "experimental.readers.video",
                       {"file_root": str(root), "sequence_length": 3, "enable_frame_num": True}, batch_size=8),
             VideoCase("readers.video[file_list,frames]", "experimental.readers.video",
                       {"file_list": str(listing), "file_list_format": "frames", "sequence_length": 2,
                        "enable_frame_num": "sequence"}, batch_size=8)]
    for rounding in ("start_down_end_up", "start_up_end_down", "all_up", "all_down"):
        cases.append(VideoCase(f"readers.video[file_list,{rounding}]", "experimental.readers.video",
                               {"file_list": str(stamps), "file_list_rounding": rounding, "sequence_length": 2,
                                "enable_frame_num": "sequence"}, batch_size=8))
    failures = []
    for case in cases:
        try:
            settle(case.id, INTENDED.get(case.id) or OPEN.get(case.id),
                   compare(run(penstock, case.graph, [], case.batch_size), run_dali(case), tolerance=2.0))
        except BaseException as e:  # noqa: BLE001 - every case is settled, the failures reported together
            if type(e).__name__ != "XFailed":
                failures.append(str(e))
    assert not failures, "\n".join(failures)


def video_input_run(library: str, path: str, sequence_length: int, batch: int, policy: str, iterations: int) -> Outcome:
    """experimental.inputs.video over one fed file: ``iterations`` batches."""
    import importlib
    import numpy as np
    lib = importlib.import_module(library)

    @lib.pipeline_def(batch_size=batch, num_threads=1, device_id=None, prefetch_queue_depth=1)
    def pipe():
        return lib.fn.experimental.inputs.video(name="vid", sequence_length=sequence_length,
                                                last_sequence_policy=policy)
    try:
        p = pipe()
        p.build()
        p.feed_input("vid", [np.fromfile(path, np.uint8)])
        outputs = []
        for _ in range(iterations):
            out, = p.run()
            outputs.append(("UINT8", out.layout(), [np.array(out[i]) for i in range(len(out))]))
        return Outcome(outputs=outputs)
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        cls = next(c for c in type(e).__mro__ if c in BUILTIN_ERRORS or c is Exception)
        return Outcome(error_class=cls.__name__, message=_first_line(e))


def video_input_dali(params: tuple) -> Outcome:
    """video_input_run's parameters as one (run_dali's runners take one)."""
    return video_input_run(*params)


@pytest.mark.parametrize("sequence_length,batch,policy,iterations", [(3, 2, "partial", 2), (5, 2, "pad", 2),
                                                                     (4, 4, "partial", 1), (2, 3, "partial", 2)])
def test_video_input(sequence_length, batch, policy, iterations):
    from known_differences import INTENDED, OPEN
    path = video_file(*A)
    case_id = f"experimental.inputs.video[sequence_length={sequence_length},batch={batch},{policy}]"
    ours = video_input_run("penstock", path, sequence_length, batch, policy, iterations)
    theirs = run_dali(("nvidia.dali", path, sequence_length, batch, policy, iterations), video_input_dali)
    settle(case_id, INTENDED.get(case_id) or OPEN.get(case_id), compare(ours, theirs, tolerance=2.0))
