"""The operator case table, generated from penstock's registry: for every operator, a call with
its required arguments only, then each of its arguments set to valid, boundary and invalid
values chosen by the argument's declared type."""
from __future__ import annotations

import dataclasses
from typing import Any

from penstock._registry import ArgType, schemas

from _harness import T

# what each operator is given besides the images; the rest take one batch of HWC uint8 images
INPUT_KINDS = {
    "decoders.image": ["jpegs"], "decoders.image_crop": ["jpegs"], "decoders.image_random_crop": ["jpegs"],
    "decoders.image_slice": ["jpegs"], "peek_image_shape": ["jpegs"], "random.choice": ["scalar_n"],
    "random.beta": [], "random.coin_flip": [], "random.normal": [], "random.uniform": [], "constant": [],
    "transforms.crop": [], "transforms.rotation": [], "transforms.scale": [], "transforms.shear": [],
    "transforms.translation": [], "transforms.combine": ["matrices", "matrices"],
    "cast_like": ["images", "floats"], "cat": ["images", "images"], "stack": ["images", "images"],
    "normalize": ["floats"], "reshape": ["floats"], "reinterpret": ["floats"], "squeeze": ["floats"],
    "expand_dims": ["floats"], "io.file.read": ["file_paths"],
    "decoders.audio": ["wavs"], "audio_resample": ["signals"], "experimental.audio_resample": ["signals"],
    "preemphasis_filter": ["signals"], "spectrogram": ["signals"], "nonsilent_region": ["signals"],
    "mel_filter_bank": ["spectra"], "mfcc": ["spectra"], "to_decibels": ["spectra"], "power_spectrum": ["spectra"],
    "decoders.video": ["videos"], "experimental.decoders.video": ["videos"], "sequence_rearrange": ["sequences"],
    "zeros": [], "ones": [], "debayer": ["bayer"], "bbox_rotate": ["boxes"], "random_crop_generator": ["shape_vectors"],
    "roi_random_crop": [], "decoders.numpy": ["npy_files"], "full_like": ["images", "scalars"],
    "filter": ["images", "filters"], "segmentation.select_masks": ["mask_ids", "polygons", "vertices"],
}
# arguments an operator cannot do without, or without which it does nothing worth comparing
BASE_ARGS: dict[str, dict[str, Any]] = {
    "cast": {"dtype": T("FLOAT")},
    "bbox_rotate": {"angle": 30.0, "input_shape": [100, 200]},
    "roi_random_crop": {"crop_shape": [10, 20], "roi_start": [5, 5], "roi_end": [30, 40]},
    "clahe": {"tiles_x": 4, "tiles_y": 3, "clip_limit": 2.0},
    "debayer": {"blue_position": [0, 0]},
    "color_space_conversion": {"image_type": T("RGB"), "output_type": T("BGR")},
    "expand_dims": {"axes": [0]},
    "get_property": {"key": "layout"},
    "paste": {"ratio": 2.0, "fill_value": 0},
    "random_resized_crop": {"size": [16, 12]},
    "rotate": {"angle": 30.0},
    "transforms.rotation": {"angle": 30.0},
    "transforms.scale": {"scale": [2.0, 3.0]},
    "transforms.translation": {"offset": [1.0, 2.0]},
    "reshape": {"shape": [6, 4]},
    "reinterpret": {"dtype": T("INT32")},
    "resize": {"resize_x": 16, "resize_y": 12},
    "tensor_resize": {"sizes": [12, 16], "axes": [0, 1]},
    "resize_crop_mirror": {"resize_x": 16, "resize_y": 12, "crop": [8, 10]},
    "slice": {"start": [2, 3], "shape": [5, 6], "axes": [0, 1]},
    "decoders.image_slice": {"start": [2, 3], "shape": [5, 6], "axes": [0, 1]},
    "decoders.image_crop": {"crop": [8, 10]},
    "crop": {"crop": [8, 10]},
    "erase": {"anchor": [2, 3], "shape": [4, 5], "axis_names": "HW"},
    "pad": {"fill_value": 3},
    "squeeze": {"axes": [0]},
    "constant": {"fdata": [1.0, 2.0, 3.0]},
    "warp_affine": {"matrix": [1.0, 0.1, 2.0, 0.0, 1.0, 3.0]},
    "experimental.warp_perspective": {"matrix": [1.1, 0.1, -2.3, -0.05, 0.95, 1.7, 0.001, 0.002, 1.0]},
    "random.uniform": {"shape": [3]},
    "random.normal": {"shape": [3]},
    "random.beta": {"shape": [3]},
    "random.coin_flip": {"shape": [3]},
    "audio_resample": {"scale": 0.5},
    "experimental.audio_resample": {"scale": 0.5},
    "mel_filter_bank": {"sample_rate": 16000.0, "nfilter": 20},
    "sequence_rearrange": {"new_order": [1, 0, 1]},
}
# the harness's own source; readers with files of their own: readers.file in test_readers, readers.nemo_asr in
# test_audio, readers.mxnet, readers.caffe, readers.caffe2, readers.sequence and experimental.readers.fits in
# test_db_readers and the video reader in test_video; inputs.video takes its video
# from feed_input; operators DALI 2.4 runs on the GPU only (no CPU oracle: their GPU tests compare with penstock's
# CPU); dump_image, which writes files into the working directory
SKIP_OPS = {"external_source", "readers.file", "readers.nemo_asr", "experimental.readers.video",
            "experimental.inputs.video", "readers.mxnet", "readers.caffe", "readers.caffe2", "readers.sequence",
            "experimental.readers.fits", "decoders.inflate", "experimental.inflate",
            "dump_image", "experimental.median_blur",
            "experimental.erode", "experimental.dilate", "jitter", "experimental.resize", "experimental.remap"}
# cases DALI 2.4 never returns from (its worker would hold up every case after it)
SKIP_CASES = {"nonsilent_region[reset_interval=0]"}
COMMON = {"name", "preserve", "bytes_per_sample_hint", "device", "seed"}
# how an operator's output tolerance differs from +-1 level / 1e-3
TOLERANCE = {"resize": 1, "resize_crop_mirror": 1, "tensor_resize": 1, "rotate": 1, "warp_affine": 1, "gaussian_blur": 1, "filter": 1, "laplacian": 1}


def _variants(arg) -> list[Any]:
    d = arg.default if not arg.required and arg.default is not None and not arg.optional else None
    t = arg.type
    if t is ArgType.INT:
        base = d if isinstance(d, int) and not isinstance(d, bool) else 1
        return [base + 1, 0, -1, "x"]
    if t is ArgType.FLOAT:
        base = float(d) if isinstance(d, (int, float)) and not isinstance(d, bool) else 1.0
        return [base * 2 if base else 0.5, 0.0, -1.0, "x"]
    if t is ArgType.BOOL:
        return [not d if isinstance(d, bool) else True]
    if t is ArgType.STR:
        return ["bogus"]
    if t is ArgType.DTYPE:
        return [T("FLOAT"), T("UINT8"), T("INT32"), T("INT16")]
    if t is ArgType.IMAGE_TYPE:
        return [T("RGB"), T("BGR"), T("GRAY"), T("YCbCr")]
    if t is ArgType.INTERP_TYPE:
        return [T("INTERP_NN"), T("INTERP_LINEAR"), T("INTERP_CUBIC"), T("INTERP_LANCZOS3"), T("INTERP_TRIANGULAR")]
    if t is ArgType.LAYOUT:
        return ["HWC", "CHW", "xyz"]
    if t is ArgType.INT_LIST:
        return [[2, 3], [1], [], "x"]
    if t is ArgType.FLOAT_LIST:
        return [[0.5, 1.5], [2.0], [], "x"]
    return []  # STR_LIST, ANY, CALLABLE: no generic values


@dataclasses.dataclass
class Case:
    id: str
    op: str
    inputs: list
    kwargs: dict
    random: bool
    tolerance: float

    def graph(self, lib: Any, *nodes: Any) -> Any:
        f = lib.fn
        for part in self.op.split("."):
            f = getattr(f, part)
        return f(*nodes, **resolve_kwargs(lib, self.kwargs))


def resolve_kwargs(lib: Any, kwargs: dict) -> dict:
    from _harness import resolve
    return {k: resolve(lib, v) for k, v in kwargs.items()}


def operator_cases() -> list[Case]:
    cases = []
    for schema in sorted(schemas().values(), key=lambda s: s.fn_name):
        op = schema.fn_name
        if schema.internal or op in SKIP_OPS or "cpu" not in schema.devices:
            continue
        inputs = INPUT_KINDS.get(op, ["images"])
        base = BASE_ARGS.get(op, {})
        tol = TOLERANCE.get(op, 1)
        cases.append(Case(f"{op}[base]", op, inputs, dict(base), schema.is_random, tol))
        cases.append(Case(f"{op}[unknown_arg]", op, inputs, dict(base, not_an_argument=1), schema.is_random, tol))
        for name, arg in schema.arguments.items():
            if name in COMMON:
                continue
            for k, value in enumerate(_variants(arg)):
                kwargs = dict(base)
                kwargs[name] = value
                case_id = f"{op}[{name}={value!r}]"
                if case_id not in SKIP_CASES:
                    cases.append(Case(case_id, op, inputs, kwargs, schema.is_random, tol))
    return cases
