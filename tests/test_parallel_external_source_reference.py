"""The reference tutorial /work/shared/reference/001 (parallel external source with fork), as
written with only its imports changed; the decoder device is the test's parameter ("mixed" as in
the tutorial on a GPU machine, "cpu" in CI)."""
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image


_CORE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "core")

TUTORIAL = '''
import numpy as np
from penstock import pipeline_def
import penstock.fn as fn
import penstock.types as types
batch_size = 4
class ExternalInputCallable:
    def __init__(self, batch_size):
        self.images_dir = "../../data/images/"
        self.batch_size = batch_size
        with open(self.images_dir + "file_list.txt", "r") as f:
            file_label = [line.rstrip().split(" ") for line in f if line != ""]
            self.files, self.labels = zip(*file_label)
        self.full_iterations = len(self.files) // batch_size
    def __call__(self, sample_info):
        sample_idx = sample_info.idx_in_epoch
        if sample_info.iteration >= self.full_iterations:
            # Indicate end of the epoch
            raise StopIteration()
        jpeg_filename = self.files[sample_idx]
        label = np.int32([self.labels[sample_idx]])
        with open(self.images_dir + jpeg_filename, "rb") as f:
            encoded_img = np.frombuffer(f.read(), dtype=np.uint8)
        return encoded_img, label
@pipeline_def(
batch_size=batch_size, num_threads=2, device_id=0, py_num_workers=4
)
def training_pipeline():
    jpegs, labels = fn.external_source(
        source=ExternalInputCallable(batch_size),
        num_outputs=2,
        batch=False,
        parallel=True,
        dtype=[types.UINT8, types.INT32],
    )
    decode = fn.decoders.image(jpegs, device="DEVICE")
    contrast = fn.random.uniform(range=(1, 3.0))
    enhance = fn.brightness_contrast(decode, contrast=contrast)
    return enhance, labels
@pipeline_def(
batch_size=batch_size, num_threads=2, device_id=0, py_num_workers=4
)
def validation_pipeline():
    jpegs, labels = fn.external_source(
        source=ExternalInputCallable(batch_size),
        num_outputs=2,
        batch=False,
        parallel=True,
        dtype=[types.UINT8, types.INT32],
    )
    decode = fn.decoders.image(jpegs, device="DEVICE")
    enhance = fn.brightness_contrast(decode, contrast=1.5)
    return enhance, labels
train_pipe = training_pipeline()
val_pipe = validation_pipeline()
pipelines = [train_pipe, val_pipe]
for pipe in pipelines:
    pipe.start_py_workers()
for pipe in pipelines:
    pipe.build()
train_out = train_pipe.run()
val_out = val_pipe.run()
'''


def _dataset(root):
    """10 JPEGs of different sizes and labels, in ../../data/images/ as the tutorial expects."""
    images = os.path.join(root, "data", "images")
    os.makedirs(images)
    rng = np.random.default_rng(1)
    lines = []
    for i in range(10):
        img = rng.integers(0, 255, (40 + 8 * i, 56 + 4 * i, 3), dtype=np.uint8)
        Image.fromarray(img).save(os.path.join(images, f"img{i}.jpg"), quality=95)
        lines.append(f"img{i}.jpg {i % 3}")
    with open(os.path.join(images, "file_list.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    work = os.path.join(root, "a", "b")
    os.makedirs(work)
    return images, work


_SAVE = """
import numpy as np
second = val_pipe.run()
try:
    val_pipe.run()
    ended = False
except StopIteration:
    ended = True
np.savez("out.npz", ended=ended,
         **{f"{name}_{k}_{i}": np.asarray(out[k].as_cpu().at(i))
            for name, out in (("train", train_out), ("val", val_out)) for k in range(2) for i in range(4)})
"""


def _cuda_device() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, driver or device
        return False


def _decoded(path: str, fancy_upsampling: bool) -> np.ndarray:
    """The JPEG's pixels as float32: with interpolated chroma as on the CPU (Pillow's decoding), or
    with each chroma sample repeated as the mixed decoders do by default (DALI's
    jpeg_fancy_upsampling=False; penstock's host decoder, itself checked in test_image_decode_kernel)."""
    if fancy_upsampling:
        return np.asarray(Image.open(path).convert("RGB"), np.float32)
    from penstock import _engine
    data = np.fromfile(path, np.uint8)
    out, shapes = _engine.decode_images(_engine.ThreadPool(1), data, np.array([[len(data)]]), np.zeros(1, np.int64),
                                        0, True, fancy_upsampling=False)[:2]
    return out.reshape(shapes[0]).astype(np.float32)


@pytest.mark.parametrize("device", ["cpu", pytest.param("mixed", marks=[
    pytest.mark.gpu, pytest.mark.skipif(not _cuda_device(), reason="needs a CUDA device")])])
def test_reference_tutorial_runs(device, tmp_path):
    # a fresh interpreter, as in the tutorial: no CUDA context before the workers are forked
    images, work = _dataset(str(tmp_path))
    script = os.path.join(work, "tutorial.py")
    with open(script, "w") as f:
        f.write(f"import sys; sys.path.insert(0, {_CORE!r})\n" + TUTORIAL.replace("DEVICE", device) + _SAVE)
    res = subprocess.run([sys.executable, script], cwd=work, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    out = np.load(os.path.join(work, "out.npz"))
    for name in ("train", "val"):
        assert [int(out[f"{name}_1_{i}"][0]) for i in range(4)] == [0, 1, 2, 0]
    for i in range(4):
        ref = _decoded(os.path.join(images, f"img{i}.jpg"), fancy_upsampling=device == "cpu")
        val, train = out[f"val_0_{i}"], out[f"train_0_{i}"]
        assert val.shape == train.shape == ref.shape and val.dtype == train.dtype == np.uint8
        # contrast 1.5 around the middle of the uint8 range; decoders may differ by IDCT rounding
        want = np.clip(128 + 1.5 * (ref - 128), 0, 255)
        assert np.abs(val.astype(np.float32) - want).mean() < 1.5
    assert bool(out["ended"])  # 10 files, batch 4: two full batches, then the end of the epoch
