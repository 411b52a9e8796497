"""How often a GPU pipeline's threads give the GIL away, to numpy and in all, per batch. Each time, a
thread waits to take the GIL back, behind the training loop's thread when it runs Python, and that
thread is pre-empted once more: numpy gives the GIL away on arrays of more than ~500 elements,
when it zeroes a few KB (that is on [N, 2..4] tables of a batch of 256: shapes, windows,
descriptors) and to draw random numbers; an engine call gives it away once for its length. The
count is the work's, not the machine's: HostDevice gives the GIL away as the device does, so the same
code path gives the same number, give or take a batch that a background thread starts early. Measured on the GPU training pipeline's host side (tests/_cuda_on_host.py's HostDevice,
no-op kernels), batch 256, by preloading tests/gil_handbacks.c in front of libpython."""
import os
import subprocess
import sys

import pytest

from _util import write_smooth_jpegs

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import ctypes, sys
sys.path.insert(0, HERE)
import pytest
from _cuda_on_host import HostDevice, use_host_device
from penstock import fn, pipeline_def, types

counter = ctypes.PyDLL(SHIM)
counter.gil_numpy_handbacks.restype = counter.gil_all_handbacks.restype = ctypes.c_long
HostDevice._launcher = lambda self, module, name: (lambda grid, block, args, stream=None: None)  # no-op kernels
use_host_device(pytest.MonkeyPatch(), HostDevice({}))

@pipeline_def(batch_size=256, num_threads=2, device_id=0, seed=3)
def train():
    jpegs, labels = fn.readers.file(file_root=ROOT, random_shuffle=True, name="Reader")
    images = fn.decoders.image_random_crop(jpegs, device="mixed", random_area=[0.08, 1.0])
    images = fn.resize(images, resize_x=24, resize_y=24)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", mean=[124, 116, 104],
                                      std=[58, 57, 57], mirror=fn.random.coin_flip())
    return images, labels.gpu()

@pipeline_def(batch_size=256, num_threads=2, device_id=0, seed=3)
def val():
    jpegs, labels = fn.readers.file(file_root=ROOT, name="Reader")
    images = fn.decoders.image(jpegs, device="mixed")
    images = fn.resize(images, resize_shorter=28)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", crop=(24, 24),
                                      mean=[124, 116, 104], std=[58, 57, 57])
    return images, labels.gpu()

@pipeline_def(batch_size=256, num_threads=2, device_id=0, seed=3)
def augment():
    jpegs, labels = fn.readers.file(file_root=ROOT, random_shuffle=True, name="Reader")
    images = fn.decoders.image(jpegs, device="mixed")
    images = fn.random_resized_crop(images, size=(24, 24))
    images = fn.flip(images, horizontal=fn.random.coin_flip())
    images = fn.rotate(images, angle=fn.random.uniform(range=(-10.0, 10.0)), fill_value=0)
    images = fn.hsv(images, hue=fn.random.uniform(range=(-10.0, 10.0)), saturation=fn.random.uniform(range=(0.8, 1.2)))
    images = fn.brightness_contrast(images, contrast=fn.random.uniform(range=(0.8, 1.2)))
    images = fn.gaussian_blur(images, sigma=fn.random.uniform(range=(0.1, 2.0)))
    images = fn.erase(images, anchor=[2, 2], shape=[4, 4], axis_names="HW")
    images = fn.cast(images, dtype=types.FLOAT) * fn.random.uniform(range=(0.5, 1.5)) + 3.0
    return fn.transpose(images, perm=[2, 0, 1]), labels.gpu()

@pipeline_def(batch_size=256, num_threads=2, device_id=0, seed=3, enable_conditionals=True)
def trivial():
    from penstock.auto_aug import trivial_augment
    jpegs, labels = fn.readers.file(file_root=ROOT, random_shuffle=True, name="Reader")
    images = fn.resize(fn.decoders.image(jpegs, device="mixed"), resize_x=24, resize_y=24)
    return trivial_augment.trivial_augment_wide(images), labels.gpu()

import numpy
ones, counted = numpy.ones(1 << 16), counter.gil_numpy_handbacks()
ones.copy()  # gives the GIL away once: the shim stands in front of libpython
shim_counted = counter.gil_numpy_handbacks() - counted

p = PIPELINE()
p.build()
for _ in range(3):
    p.run()
before = counter.gil_numpy_handbacks(), counter.gil_all_handbacks()
for _ in range(BATCHES):
    p.run()
after = counter.gil_numpy_handbacks(), counter.gil_all_handbacks()
print((after[0] - before[0]) / BATCHES, (after[1] - before[1]) / BATCHES, shim_counted)
"""


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """Small photo-like JPEGs, 64 in two classes: a batch's numpy work is the same for any picture size."""
    return write_smooth_jpegs(tmp_path_factory.mktemp("photos"), 32, lambda i, c: (20 + i, 28 + 2 * i + c), quality=90)


def _handbacks(shim: str, photos, pipeline: str) -> tuple[float, float]:
    """numpy's and all hand-backs a batch of the child's ``pipeline``."""
    code = CHILD.replace("HERE", repr(HERE)).replace("SHIM", repr(shim)).replace("ROOT", repr(photos)) \
        .replace("BATCHES", "6").replace("PIPELINE", pipeline)
    script = os.path.join(os.path.dirname(shim), f"child_{pipeline}.py")  # a file: conditionals read the source
    with open(script, "w") as f:
        f.write(code)
    env = {**os.environ, "LD_PRELOAD": shim}
    done = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    numpy_handbacks, all_handbacks, shim_counted = map(float, done.stdout.split())
    assert shim_counted == 1 and all_handbacks >= numpy_handbacks
    return numpy_handbacks, all_handbacks


def test_a_gpu_training_pipeline_gives_numpy_the_gil_rarely(shim, photos):
    numpy_handbacks, all_handbacks = _handbacks(shim, photos, "train")
    # 2026-12-02: numpy's 103 a batch before the engine took over the [N, k] planning of resize,
    # crop_mirror_normalize, packed offsets and window checks; 45 after (13 of them HostDevice's own
    # copies, standing in for uploads; 7 the random crop's draws); 34 once the engine drew the random
    # crops and coin flips and split the batch between host and GPU; 11 once crop_mirror_normalize's
    # plan took the operator's float32 deviations and uint8 flips as they are (casting them on the way
    # in gave the GIL away) and its channels-first shapes were made by the engine; 9 once the fused
    # resize's offsets were shared zeros and the host part's upload length came from the engine (8 of
    # the 9 were HostDevice's copies, numpy's from ~500 elements: 10.5 on a loaded machine, where the
    # split between host and GPU changed their sizes); 0 since HostDevice uploads as the device does
    # (packed parameters, the GIL given away from 1 MiB): the pipeline's own numpy work gives it none.
    # The bound leaves one for a batch of the next window that a background thread starts early.
    assert numpy_handbacks <= 1, numpy_handbacks
    # every hand-back: 45 a batch once engine calls stopped taking the GIL back to drop their array
    # arguments (3-5 more per call that releases it) and the JPEG check ran on the host decoder's
    # thread; 23 after the crop_mirror_normalize changes above; 18 once the host's share of the mixed
    # decoding, the JPEG check and the file reader's reads ran on native threads (engine/background.h),
    # no Python thread waking for them; 16-17 with the two numpy ones above gone (a thread that finds its
    # queue empty gives it away once more: timing); 7-9 with HostDevice's copies as the device's; 12-13
    # (2026-12-07) once the random crop's windows, the split's choice and the fused resize's two planning
    # calls ran without the GIL: each held it 40-120 us a batch on an H100's host beside a training model,
    # where a hand-back costs the pipeline's thread a wait and the model's threads nothing
    assert all_handbacks <= 16, all_handbacks


# (pipeline, numpy's bound, all hand-backs' bound), measured 2026-12-04:
# - val: numpy's 58-74 a batch (all: 66-82) while resize_shorter's sizing rules ran on [N, 2] numpy
#   tables (~50) and the centre crop's windows were [N, 3] ones (5); 9 (all: 16) once the engine sized
#   the resize and the windows took their columns through it: the 9 were HostDevice's copies, as in the
#   training pipeline
# - augment: numpy's 1,531 (all: 1,538) while random_resized_crop, flip, rotate, hsv,
#   brightness_contrast, gaussian_blur, erase, the arithmetic and transpose planned on [N, k] numpy
#   tables (erase in a Python loop over the samples); 28 (all: 36) once the engine planned them: 27 of
#   the 28 were HostDevice's copies of the kernels' parameters, standing in for uploads
# - trivial: numpy's 203-214 (all: 332-380) while the conditionals' split and merge took and put rows
#   with numpy's fancy indexing; 50-52 (all: 202-208) once the engine did; all 56-59 once element-wise
#   calls of at most 64 KB (the policy's per-sample magnitudes) kept the GIL
# and on 2026-12-05, with HostDevice's copies as the device's: val 1 (the decoded batch's upload, over
# 1 MiB; all: 8-9); augment 7 (all: 14-16) while random.uniform drew with numpy, 1 (all: 8-9) once the
# engine drew its floats and its picks from `values`; trivial 35 (all: 42-44) while the point
# operations' planes and parameter tables, the transforms' homogeneous matrices and the merge's source
# names were numpy's, 4 (all: 11-13) after: histogram_luts' zeroed histograms (cupy's memset on a GPU)
# and the decoded batch's upload; and on 2026-12-07, with the planning calls of tens of microseconds
# made without the GIL (the training pipeline's bound says why), all: val 11-12, augment 12-13, trivial
# 13-16
@pytest.mark.parametrize("pipeline, numpy_bound, all_bound",
                         [("val", 2, 16), ("augment", 2, 16), ("trivial", 5, 20)])
def test_gpu_augmentation_pipelines_give_numpy_the_gil_rarely(shim, photos, pipeline, numpy_bound, all_bound):
    numpy_handbacks, all_handbacks = _handbacks(shim, photos, pipeline)
    assert numpy_handbacks <= numpy_bound, numpy_handbacks
    assert all_handbacks <= all_bound, all_handbacks


def test_shared_tables_are_read_only_views_made_once_per_size():
    from penstock._batch import sample_positions, zero_rows
    assert zero_rows(300, 3) is zero_rows(300, 3) and zero_rows(300, 3).shape == (300, 3)
    assert not zero_rows(300, 3).any() and not zero_rows(300, 3).flags.writeable
    assert zero_rows(300, 3).base is zero_rows(400, 3).base  # one array for the sizes up to 512
    assert sample_positions(5).tolist() == [0, 1, 2, 3, 4] and sample_positions(0).shape == (0,)
    assert sample_positions(257).base is sample_positions(300).base and not sample_positions(7).flags.writeable
