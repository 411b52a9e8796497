"""The TorchVision-style API against DALI 2.4's (``nvidia.dali.experimental.torchvision``): its
deterministic transforms through Compose (a pipeline in both libraries) and its functions (the
dynamic mode in both), on PIL images and CHW / NCHW tensors, case by case."""
from __future__ import annotations

import dataclasses
import importlib
import os
import sys
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))

from _harness import BUILTIN_ERRORS, _first_line, run_dali, settle  # noqa: E402
from known_differences import TORCHVISION_INTENDED  # noqa: E402

torch = pytest.importorskip("torch")


def _inputs(kind: str) -> Any:
    from PIL import Image
    from make_sample_data import photo_like
    rng = np.random.default_rng(2)
    arrays = [photo_like(rng, 61, 83) for _ in range(2)]
    if kind == "pil":
        return Image.fromarray(arrays[0])
    tensors = [torch.from_numpy(a).permute(2, 0, 1).contiguous() for a in arrays]
    return tensors[0] if kind == "chw" else torch.stack(tensors)


# (name, transforms built from the library's module, inputs, tolerance in levels)
COMPOSED = [
    ("resize_hw", lambda T: [T.Resize((40, 50))], ("pil", "chw", "nchw"), 1),
    ("resize_short", lambda T: [T.Resize(30)], ("pil", "chw", "nchw"), 1),
    ("resize_nearest", lambda T: [T.Resize((40, 50), interpolation=T.InterpolationMode.NEAREST)], ("chw",), 0),
    ("center_crop", lambda T: [T.CenterCrop(33)], ("pil", "chw", "nchw"), 0),
    ("center_crop_larger", lambda T: [T.CenterCrop((70, 90))], ("pil", "chw"), 0),
    ("pad", lambda T: [T.Pad((1, 2, 3, 4), fill=5)], ("pil", "chw", "nchw"), 0),
    ("hflip", lambda T: [T.RandomHorizontalFlip(1.0)], ("pil", "chw", "nchw"), 0),
    ("vflip", lambda T: [T.RandomVerticalFlip(1.0)], ("pil", "chw"), 0),
    ("blur", lambda T: [T.GaussianBlur(5, sigma=1.5)], ("pil", "chw"), 1),
    ("grayscale", lambda T: [T.Grayscale()], ("pil",), 1),
    ("grayscale3", lambda T: [T.Grayscale(3)], ("pil",), 1),
    ("to_tensor", lambda T: [T.Resize((20, 30)), T.PILToTensor()], ("pil",), 1),
    ("chain", lambda T: [T.Resize(40), T.CenterCrop(32), T.RandomHorizontalFlip(1.0)], ("pil", "chw", "nchw"), 1),
]

FUNCTIONAL = [
    ("f_resize", lambda F, x: F.resize(x, [40, 50]), ("pil", "chw"), 1),
    ("f_center_crop", lambda F, x: F.center_crop(x, [33, 41]), ("pil", "chw"), 0),
    ("f_crop", lambda F, x: F.crop(x, 3, 5, 20, 30), ("pil", "chw"), 0),
    ("f_pad", lambda F, x: F.pad(x, [2, 3]), ("pil", "chw"), 0),
    ("f_hflip", lambda F, x: F.horizontal_flip(x), ("pil", "chw"), 0),
    ("f_vflip", lambda F, x: F.vertical_flip(x), ("pil", "chw"), 0),
    ("f_normalize", lambda F, x: F.normalize(x.float() / 255, [0.4, 0.5, 0.6], [0.2, 0.3, 0.25]), ("chw",), 1e-5),
    ("f_gray", lambda F, x: F.rgb_to_grayscale(x), ("pil",), 1),
    ("f_blur", lambda F, x: F.gaussian_blur(x, [5, 5], [1.5, 1.5]), ("chw",), 1),
    ("f_pil_to_tensor", lambda F, x: F.pil_to_tensor(x), ("pil",), 0),
    ("f_to_pil", lambda F, x: F.to_pil_image(x), ("chw",), 0),
    ("f_dimensions", lambda F, x: np.array(F.get_dimensions(x)), ("pil", "chw"), 0),
]


@dataclasses.dataclass
class TvCase:
    name: str
    kind: str


def _as_array(out: Any) -> np.ndarray:
    if isinstance(out, (list, tuple)) and out and not isinstance(out[0], (int, float)):
        return np.stack([_as_array(o) for o in out])
    return np.asarray(out)


def run_case(module: str, case: TvCase) -> tuple:
    """("value", array) or ("error", builtin class, message) of a case with ``module``'s API."""
    T = importlib.import_module(module)
    F = importlib.import_module(module + ".v2.functional")
    x = _inputs(case.kind)
    try:
        entry = {c[0]: c for c in COMPOSED + FUNCTIONAL}[case.name]
        if case.name.startswith("f_"):
            return ("value", _as_array(entry[1](F, x)))
        return ("value", _as_array(T.Compose(entry[1](T), batch_size=4, num_threads=1)(x)))
    except Exception as e:  # noqa: BLE001 - the outcome is what is compared
        cls = next(c for c in type(e).__mro__ if c in BUILTIN_ERRORS or c is Exception)
        return ("error", cls.__name__, _first_line(e))


def run_dali_case(case: TvCase) -> tuple:
    # DALI 2.4's Compose asks torch for its current CUDA stream when it feeds a torch tensor to its
    # pipeline, which fails with a CPU-only torch; host data needs no stream, so none is given.
    import nvidia.dali.types as dali_types
    asked = dali_types._get_default_stream_for_array
    dali_types._get_default_stream_for_array = lambda data: None if not torch.cuda.is_available() else asked(data)
    return run_case("nvidia.dali.experimental.torchvision", case)


CASES = [TvCase(name, kind) for name, _, kinds, _ in COMPOSED + FUNCTIONAL for kind in kinds]
TOLERANCE = {c[0]: c[3] for c in COMPOSED + FUNCTIONAL}


@pytest.mark.parametrize("case", CASES, ids=[f"{c.name}[{c.kind}]" for c in CASES])
def test_torchvision_api_against_dali(case):
    ours = run_case("penstock.experimental.torchvision", case)
    theirs = run_dali(case, run_dali_case)
    diff = None
    if not isinstance(theirs, tuple):
        diff = None if ours[0] == "error" else "DALI crashes; penstock does not"
    elif theirs[0] == "error" or ours[0] == "error":
        if ours[0] != "error":
            diff = f"DALI raises {theirs[1]}: {theirs[2]}; penstock does not"
        elif theirs[0] != "error":
            diff = f"penstock raises {ours[1]}: {ours[2]}; DALI does not"
    elif ours[1].shape != theirs[1].shape:
        diff = f"shape {ours[1].shape}, DALI {theirs[1].shape}"
    elif ours[1].dtype != theirs[1].dtype:
        diff = f"type {ours[1].dtype}, DALI {theirs[1].dtype}"
    else:
        worst = np.abs(ours[1].astype(np.float64) - theirs[1].astype(np.float64)).max(initial=0)
        if worst > TOLERANCE[case.name]:
            diff = f"values differ by up to {worst:.4g}"
    settle(f"torchvision:{case.name}[{case.kind}]", TORCHVISION_INTENDED.get(f"{case.name}[{case.kind}]"), diff)
