"""Differences from DALI 2.4 the differential table knows about, by case id.

INTENDED: penstock differs on purpose (the reason says why). OPEN: found, not fixed yet; listed so
the table stays a regression check while they are worked on. A case here that starts to agree
with DALI fails, asking to be removed. docs/intended_differences.md is the users' table of the
intended ones (tests/test_intended_differences.py checks that it names every case here).
"""

_SQUEEZE_RANGE = ("DALI 2.4 skips squeeze axes outside 0..ndim-1 (negative ones too) without a word, although "
                  "its documentation requires them in range; penstock raises rather than ignore a named axis")

_ON_ERROR = ("on_error is a penstock-only argument (skip or raise on a bad sample); DALI 2.4 has no such "
             "argument and raises KeyError naming it")

_ACCEPT_CORRUPT_JPEG = ("accept_corrupt_jpeg is a penstock-only argument (decode JPEGs in which libjpeg-turbo "
                        "finds corrupt data, as DALI always does; by default penstock refuses them); DALI 2.4 "
                        "has no such argument and raises KeyError naming it")

_DECODERS = ("decoders.image", "decoders.image_crop", "decoders.image_random_crop", "decoders.image_slice")

INTENDED: dict[str, str] = {
    **{f"{op}[on_error='bogus']": _ON_ERROR
       for op in _DECODERS + ("decoders.audio", "readers.coco", "readers.numpy", "readers.webdataset", "decoders.video",
                              "experimental.decoders.video")},
    **{f"{op}[start_frame=-1]": ("DALI 2.4 accepts a negative start_frame; penstock raises rather than guess which "
                                 "frame comes before the first") for op in ("decoders.video", "experimental.decoders.video")},
    **{f"{op}[sequence_length=0]": ("DALI 2.4 accepts sequence_length=0; penstock raises: a sequence needs a frame")
       for op in ("decoders.video", "experimental.decoders.video")},
    **{f"{op}[accept_corrupt_jpeg=True]": _ACCEPT_CORRUPT_JPEG for op in _DECODERS},
    'lookup_table[keys=[]]': ("DALI 2.4's process dies on an explicitly empty 'keys'; penstock takes it as no "
                              "table (every value becomes default_value), as DALI does when keys is left out"),
    'crop_mirror_normalize[scale=0.0]': ("DALI 2.4 outputs NaN (float) or 0 (uint8) for scale=0 whatever the shift; "
                                         "penstock computes (x - mean) / std * scale + shift, which is shift"),
    'pad[fill_value=-1.0]': ("DALI 2.4 converts an out-of-range fill value with a plain float-to-integer cast "
                             "(undefined in C++: -1 became 255); penstock clamps it to the output type's range"),
    'device:cpu_only:device_id=0': ("without CUDA, DALI 2.4 refuses any pipeline given a device_id, at construction; "
                                    "penstock runs one of CPU operators (as DALI does where a driver is installed), "
                                    "and refuses GPU and mixed operators at build in DALI's words"),
    **{f"{op}[dtype=types.INT32]": (
        "INT32 audio made from float arithmetic: the values agree to the float's precision (1.2e-7 of full "
        "scale, a few hundred levels of 2**31), not to one level") for op in ("audio_resample",
                                                                               "experimental.audio_resample")},
    'nonsilent_region[cutoff_db=0.0]': ("a threshold equal to the largest windowed power: which positions reach it "
                                        "is decided by rounding; penstock's running sums are in double, DALI's in "
                                        "float"),
    'nonsilent_region[window_length=-1]': ("DALI 2.4 accepts a negative window_length and returns a region; "
                                           "penstock raises"),
    'power_spectrum[nfft=2]': ("DALI 2.4's FFT library cannot plan a transform of 2 values and raises; penstock "
                               "computes it"),
    'full[base]': ("DALI 2.4 raises ValueError when full's output (a scalar here) does not take the layout of a "
                   "fill value that has one; penstock gives the output the 'layout' argument (none by default)"),
    'water[mask=0]': ("DALI 2.4 outputs zeros for a constant mask=0 (a per-sample mask of 0 copies the sample); "
                      "penstock copies the sample, as mask=0 is documented to"),
    'sphere[mask=0]': ("DALI 2.4 ignores a constant mask=0 and applies the effect (a per-sample mask of 0 copies "
                       "the sample); penstock copies the sample, as mask=0 is documented to"),
    **{f"{op}[fill_value=-1.0]": ("DALI 2.4 converts an out-of-range fill value with a plain float-to-integer cast "
                                  "(undefined in C++: -1 became 255); penstock clamps it to the output type's range")
       for op in ("water", "sphere")},
    **{f"clahe[bins={v}]": ("DALI 2.4's CPU clahe ignores bins (it always takes OpenCV's 256 for uint8); penstock "
                            "checks bins as documented (a power of 2) and supports 256")
       for v in (257, 0, -1)},
    'reductions.rms[dtype=types.UINT8]': ("DALI 2.4 sums the squares in the output type when it is the input's "
                                         "integer type, so they wrap (rms of 0..255 comes out as a few levels); "
                                         "penstock sums them wide and converts the root"),
    'squeeze:axes_node': ("DALI 2.4's squeeze does not see axes given as a per-sample input and raises that "
                          "neither axes nor axis_names is given; penstock removes each sample's axes"),
    'reshape:src_dims_node': ("DALI 2.4's reshape does not see src_dims given as a per-sample input (alone, it "
                              "finds nothing to do and raises); penstock picks each sample's dims"),
    'reshape:src_dims_node_rel': ("DALI 2.4's reshape ignores src_dims given as a per-sample input and scales the "
                                  "input dims in order; penstock scales the dims each sample's src_dims picks"),
    'squeeze:negative': _SQUEEZE_RANGE,
    'squeeze:out_of_range': _SQUEEZE_RANGE,
    'squeeze[axes=[2, 3]]': _SQUEEZE_RANGE,
    "caffe2:sparse": ("DALI 2.4's readers.caffe2 fails on every record with label_type=1 (MULTI_LABEL_SPARSE): its "
                      "label output gets no type; penstock outputs the int32 0/1 vector of num_labels it documents"),
    "caffe2:weighted_sparse": ("DALI 2.4's readers.caffe2 with label_type=3 (MULTI_LABEL_WEIGHTED_SPARSE) takes the "
                               "weights tensor for a bounding box and fails (or crashes without one); penstock "
                               "outputs the float vector of num_labels holding each index's weight"),
    'experimental.readers.video[sequence_length=3,image_type=types.YCbCr,vp9_a]': (
        "DALI 2.4's CPU reader fails to convert frames to YCbCr (libswscale rejects its request); penstock gives "
        "the video's own YCbCr planes, chroma upsampled, as FHWC"),
}

_SHUFFLE_AFTER_EPOCH = ("shuffle_after_epoch gives a new permutation every epoch, not DALI 2.4's (as readers.file: "
                        "its per-epoch list shuffle could not be reproduced)")

# The last full run compared 7110 cases; the 21 that differ are all listed here.
OPEN: dict[str, str] = {
    "readers.nemo_asr:after_epoch": _SHUFFLE_AFTER_EPOCH,
    "readers.nemo_asr:after_epoch_seed": _SHUFFLE_AFTER_EPOCH,
}

# The dynamic mode (test_dynamic_mode.py), by operator case id or API case name. The INTENDED differences
# above hold for the dynamic mode too, unless listed here with None.
_DALI_DYNAMIC_ARGS = (
    "DALI 2.4's dynamic mode gives another outcome than its own pipelines for this call (test_operators.py "
    "finds DALI's pipelines agreeing with penstock's here): it passes the arguments that may be tensors as "
    "tensor argument inputs, which its operators read otherwise (a flat list where a matrix is expected, an "
    "empty list as no value, float lists truncated, other checks). penstock's dynamic mode passes arguments "
    "as fn does, so a call gives what the same call gives in a pipeline")
DYNAMIC_INTENDED: dict[str, str | None] = {
    # None: a difference INTENDED above that DALI's dynamic mode does not have
    "squeeze[axes=[2, 3]]": None,  # DALI's dynamic mode checks the axes (its pipeline skips them)
    **{case: _DALI_DYNAMIC_ARGS for case in (
        'coord_transform[M=[2.0]]', 'coord_transform[T=[2.0]]', 'coord_transform[MT=[2.0]]',
        'decoders.image_slice[start=[2.0]]', 'decoders.image_slice[shape=[2.0]]', 'erase[anchor=[]]',
        'normalize[mean=2.0]', 'normalize[mean=0.0]', 'normalize[mean=-1.0]',
        'normalize[stddev=2.0]', 'normalize[stddev=0.0]', 'normalize[stddev=-1.0]',
        'pad[shape=[1]]', 'pad[align=[1]]', 'random.uniform[values=[]]', 'reinterpret[src_dims=[2, 3]]',
        'reinterpret[src_dims=[1]]', 'reinterpret[src_dims=[]]', 'reshape[src_dims=[2, 3]]',
        'rotate[size=[0.5, 1.5]]', 'segmentation.random_object_bbox[threshold=[1]]', 'slice[start=[2.0]]',
        'slice[shape=[2.0]]', 'squeeze[axes=[]]', 'transforms.rotation[axis=[2.0]]',
        'transforms.rotation[center=[2.0]]', 'transforms.scale[scale=[]]', 'transforms.scale[center=[2.0]]',
        'warp_affine[base]', 'warp_affine[inverse_map=False]', 'warp_affine[size=[0.5, 1.5]]',
        'warp_affine[dtype=types.FLOAT]', 'warp_affine[dtype=types.UINT8]',
        'warp_affine[fill_value=2.0]', 'warp_affine[fill_value=0.0]', 'warp_affine[fill_value=-1.0]',
        'warp_affine[interp_type=types.INTERP_NN]', 'warp_affine[interp_type=types.INTERP_LINEAR]',
        'debayer[blue_position=[1]]', 'filter[anchor=[1]]', 'roi_random_crop[roi_start=[1]]',
        'roi_random_crop[roi_end=[1]]', 'tensor_resize[sizes=[2.0]]', 'tensor_resize[alignment=[2.0]]',
        *(f"experimental.warp_perspective[{arg}]" for arg in (
            "base", "matrix=[2.0]", "size=[0.5, 1.5]", "size=[2.0]", "fill_value=[2.0]", "fill_value=[]",
            "interp_type=types.INTERP_NN", "interp_type=types.INTERP_LINEAR", "interp_type=types.INTERP_CUBIC",
            "inverse_map=False")),
    )},
    # DALI 2.4's dynamic mode gives full's scalar no layout, and honours a constant mask=0, as penstock does
    "full[base]": None, "water[mask=0]": None, "sphere[mask=0]": None,
    **{f"{op}[{arg}]": ("DALI 2.4's dynamic mode rejects arguments it does not know with TypeError (a Python "
                        "signature); these arguments are penstock's own (see INTENDED above)")
       for op in _DECODERS for arg in ("on_error='bogus'", "accept_corrupt_jpeg=True")},
    "batch_samples": ("DALI 2.4's Batch.select(slice or list) and Batch.tensors[slice] return every sample, "
                      "whatever was asked; penstock returns the samples asked for, as DALI documents"),
    "batch_size_mismatching_the_inputs": ("DALI 2.4 takes batch_size=3 for inputs of 2 samples and returns a "
                                          "Batch claiming 3 samples that holds 2; penstock raises ValueError"),
    "tensor_indexing_with_none": ("penstock's dynamic mode indexes as a pipeline does (and numpy): None inserts a "
                                  "unit dimension; DALI 2.4's dynamic mode raises ValueError for it"),
}

# Calls for which DALI 2.4's dynamic mode writes outside its buffers (glibc reports "free(): invalid
# pointer"): what it gives depends on its heap, from one run or test order to the next (in isolation an
# image, after other cases an error), so there is nothing to compare; DALI is not called for them.
# penstock raises for them as its pipelines do (test_operators.py compares those with DALI's).
DYNAMIC_UNDEFINED: dict[str, str] = {
    case: "DALI 2.4's dynamic mode writes outside its buffers for this call; its outcome depends on its heap"
    for case in ("paste[n_channels=4]", "paste[n_channels=0]")}

# Found by the dynamic-mode table, not fixed yet.
DYNAMIC_OPEN: dict[str, str] = {
    "numpy_and_torch_inputs": ("fn.flip gives an input without a layout the output layout 'HWC' in DALI 2.4, ''"
                               " in penstock (pipelines too: the operator table always gives flip a layout)"),
}

# The TorchVision-style API (test_torchvision_api.py), by case.
_CROP_LARGER = ("a centre crop larger than the image: torchvision pads floor(slack / 2) before the image; DALI 2.4 "
                "rounds half the (negative) slack away from zero, one pixel further when the slack is odd. penstock "
                "pads as torchvision (tests/test_torchvision.py checks it against torchvision)")
TORCHVISION_INTENDED: dict[str, str] = {
    "center_crop_larger[pil]": _CROP_LARGER,
    "center_crop_larger[chw]": _CROP_LARGER,
}
