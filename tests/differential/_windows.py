"""Window operators' corners (crop, crop_mirror_normalize, slice): windows out of bounds under each
policy, positions outside [0, 1], axes out of range or not in the layout, sequences (a depth given
for frames crops them), planar inputs and any permutation of the input layout as the output's,
fill values with pad_output, layouts the operators do not take. Errors carry DALI's words."""
from __future__ import annotations

import numpy as np

from _expressions import Expression


def _images(*shape: int, layout: str | None) -> tuple:
    """Two samples of a distinct pattern each (uint8), in ``layout``."""
    n = int(np.prod(shape))
    return ([((np.arange(n) * 7 + k * 13) % 251).reshape(shape).tolist() for k in range(2)], "uint8", layout)


HWC = _images(10, 12, 3, layout="HWC")
SEQ = _images(4, 10, 12, 3, layout="FHWC")
VOL = _images(4, 10, 12, 3, layout="DHWC")
NORM = "mean=[10.0, 20.0, 30.0], std=[2.0, 3.0, 4.0]"


def _planar(layout: str) -> tuple:
    shape = {"CHW": (3, 10, 12), "FCHW": (4, 3, 10, 12), "CFHW": (3, 4, 10, 12), "CDHW": (3, 4, 10, 12)}[layout]
    return _images(*shape, layout=layout)


def _cases() -> list[Expression]:
    e = Expression
    cases = [
        # out of bounds, per policy
        e("window:slice_oob", "fn.slice(a, start=[5, 5], shape=[8, 8], axes=[0, 1])", (HWC,)),
        e("window:slice_oob_negative", "fn.slice(a, start=[-2, 0], shape=[4, 4], axes=[0, 1])", (HWC,)),
        e("window:slice_oob_relative", "fn.slice(a, rel_start=[0.5, 0.5], rel_shape=[0.7, 0.2], axes=[0, 1])",
          (HWC,)),
        e("window:slice_pad", "fn.slice(a, start=[5, 5], shape=[8, 8], axes=[0, 1], out_of_bounds_policy='pad', "
          "fill_values=[1, 2, 3])", (HWC,)),
        e("window:slice_trim", "fn.slice(a, start=[5, 5], shape=[8, 8], axes=[0, 1], "
          "out_of_bounds_policy='trim_to_shape')", (HWC,)),
        e("window:crop_oob", "fn.crop(a, crop=(11, 11))", (HWC,)),
        e("window:crop_pad", "fn.crop(a, crop=(11, 13), out_of_bounds_policy='pad', fill_values=[7, 8, 9])", (HWC,)),
        e("window:crop_trim", "fn.crop(a, crop=(11, 13), out_of_bounds_policy='trim_to_shape')", (HWC,)),
        e("window:cmn_oob", f"fn.crop_mirror_normalize(a, crop=(11, 11), {NORM})", (HWC,)),
        e("window:cmn_oob_error_pad_output", f"fn.crop_mirror_normalize(a, crop=(20, 24), {NORM}, pad_output=True, "
          "out_of_bounds_policy='error', output_layout='HWC')", (HWC,)),
        # positions outside [0, 1]: refused whatever the policy; a position of an axis not cropped is not
        e("window:crop_pos_x_above", "fn.crop(a, crop=(5, 5), crop_pos_x=1.5)", (HWC,)),
        e("window:crop_pos_y_below_pad", "fn.crop(a, crop=(5, 5), crop_pos_y=-0.3, out_of_bounds_policy='pad')",
          (HWC,)),
        e("window:crop_pos_z_of_an_image", "fn.crop(a, crop=(5, 5), crop_pos_z=2.0)", (HWC,)),
        e("window:crop_pos_sequence", "fn.crop(a, crop=(5, 5), crop_pos_x=1.5)", (SEQ,)),
        e("window:crop_pos_volume_z", "fn.crop(a, crop=(2, 5, 5), crop_pos_z=-1.0)", (VOL,)),
        e("window:cmn_pos_both", "fn.crop_mirror_normalize(a, crop=(5, 5), crop_pos_x=1.2, crop_pos_y=-0.3, "
          "out_of_bounds_policy='pad')", (HWC,)),
        e("window:cmn_pos_without_crop", "fn.crop_mirror_normalize(a, crop_pos_x=1.5)", (HWC,)),
        # axes
        e("window:slice_axis_3", "fn.slice(a, start=[1], shape=[2], axes=[3])", (HWC,)),
        e("window:slice_axis_-4", "fn.slice(a, start=[1], shape=[2], axes=[-4])", (HWC,)),
        e("window:slice_axis_name_missing", "fn.slice(a, start=[1], shape=[2], axis_names='D')", (HWC,)),
        # sequences: a depth crops the frames
        e("window:crop_seq", "fn.crop(a, crop=(5, 6))", (SEQ,)),
        e("window:crop_seq_crop_d", "fn.crop(a, crop_d=2, crop_h=5, crop_w=6, crop_pos_z=1.0)", (SEQ,)),
        e("window:crop_seq_crop_3", "fn.crop(a, crop=(2, 5, 6), crop_pos_z=0.0)", (SEQ,)),
        e("window:crop_image_crop_d", "fn.crop(a, crop_d=2, crop_h=5, crop_w=6)", (HWC,)),
        e("window:crop_d_alone", "fn.crop(a, crop_d=2)", (SEQ,)),
        e("window:cmn_seq_crop_d_FHWC", f"fn.crop_mirror_normalize(a, crop_d=2, crop_h=5, crop_w=6, crop_pos_z=0.3, "
          f"{NORM}, output_layout='FHWC')", (SEQ,)),
        e("window:cmn_seq_crop_d_FCHW", f"fn.crop_mirror_normalize(a, crop_d=3, crop_h=5, crop_w=6, {NORM}, "
          "output_layout='FCHW', mirror=1)", (SEQ,)),
        e("window:cmn_seq_default_layout", "fn.crop_mirror_normalize(a, crop=(5, 6))", (SEQ,)),
        e("window:cmn_seq_HWC", "fn.crop_mirror_normalize(a, crop=(5, 6), output_layout='HWC')", (SEQ,)),
        e("window:cmn_seq_CFHW", f"fn.crop_mirror_normalize(a, crop=(5, 6), {NORM}, output_layout='CFHW')", (SEQ,)),
        e("window:cmn_vol_CDHW", f"fn.crop_mirror_normalize(a, crop=(2, 5, 6), {NORM}, output_layout='CDHW')", (VOL,)),
        e("window:cmn_vol_DCHW", "fn.crop_mirror_normalize(a, crop=(2, 5, 6), output_layout='DCHW', pad_output=True)",
          (VOL,)),
        # output layouts: any permutation of the input's
        *[e(f"window:cmn_output_{lay}", f"fn.crop_mirror_normalize(a, crop=(5, 6), {NORM}, output_layout='{lay}', "
            "mirror=1)", (HWC,)) for lay in ("HWC", "CHW", "WHC", "CWH", "HCW", "HW", "HWCC")],
        # planar inputs
        *[e(f"window:cmn_planar_{lay}_to_{out}", f"fn.crop_mirror_normalize(a, crop=(5, 6), {NORM}, "
            f"output_layout='{out}', mirror=1)", (_planar(lay),))
          for lay, out in (("CHW", "CHW"), ("CHW", "HWC"), ("FCHW", "FCHW"), ("FCHW", "FHWC"), ("CFHW", "FCHW"),
                           ("CDHW", "DHWC"))],
        e("window:crop_planar_CHW", "fn.crop(a, crop=(5, 6), crop_pos_x=0.25)", (_planar("CHW"),)),
        e("window:crop_planar_FCHW", "fn.crop(a, crop=(5, 6))", (_planar("FCHW"),)),
        # fill values and pad_output
        *[e(f"window:cmn_fill{len(fill)}_pad{pad}_{norm}", f"fn.crop_mirror_normalize(a, crop=(12, 14), "
            f"out_of_bounds_policy='pad', fill_values={list(fill)}, pad_output={pad}, output_layout='HWC'"
            + (f", {NORM})" if norm == "perchannel" else ")"), (HWC,))
          for fill in ((5,), (5, 6), (5, 6, 7), (5, 6, 7, 8), (5, 6, 7, 8, 9)) for pad in (False, True)
          for norm in ("scalar", "perchannel")],
        # layouts the window operators do not take
        e("window:crop_HW", "fn.crop(a, crop=(5, 6))", (_images(10, 12, layout="HW"),)),
        e("window:crop_ABC", "fn.crop(a, crop=(5, 6))", (_images(10, 12, 3, layout="ABC"),)),
        e("window:crop_2d_no_layout", "fn.crop(a, crop=(5, 6))", (_images(10, 12, layout=None),)),
        e("window:crop_3d_no_layout", "fn.crop(a, crop=(5, 6))", (_images(10, 12, 3, layout=None),)),
        e("window:crop_4d_no_layout", "fn.crop(a, crop=(5, 6))", (_images(4, 10, 12, 3, layout=None),)),
        e("window:cmn_ABC", "fn.crop_mirror_normalize(a, crop_h=5, crop_w=5)", (_images(10, 12, 3, layout="ABC"),)),
        e("window:cmn_HW", "fn.crop_mirror_normalize(a, crop=(5, 6))", (_images(10, 12, layout="HW"),)),
        e("window:cmn_no_layout", "fn.crop_mirror_normalize(a, crop_h=5, crop_w=6)", (_images(10, 12, 3, layout=None),)),
    ]
    return cases


WINDOWS = _cases()
