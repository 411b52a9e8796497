"""The reference snippet /work/shared/reference/004 (DALI's PyTorch classification recipe), with only
its imports changed: as written on the GPU (gpu-marked: mixed decoding, GPU resize and
CropMirrorNormalize, labels moved with .cuda()), and in its CPU variant in CI (the snippet's own
``dali_cpu`` switch, extended to every operator: decoder, resize and CropMirrorNormalize on the CPU).
The snippet's driver code is completed into runnable form: its fragments use undefined globals
(BATCH_SIZE, data_dir, fn) and a bare ``continue``.
Its feed_input(..., layout="HWC") of 1-D encoded bytes is left without the layout: DALI 2.4 rejects
it ("The layout 'HWC' cannot describe 1-dimensional data"), and so does penstock."""
from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import penstock.ops as ops  # noqa: E402
import penstock.types as types  # noqa: E402
from penstock import _cuda, fn  # noqa: E402
from penstock.pipeline import Pipeline  # noqa: E402
from penstock.plugin.pytorch import DALIClassificationIterator, DALIGenericIterator  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from make_sample_data import make_dataset  # noqa: E402

BATCH_SIZE = 4
on_the_gpu = [pytest.mark.gpu, pytest.mark.skipif(not (_cuda.available() and torch.cuda.is_available()),
                                                 reason="needs CUDA (CuPy and CUDA-enabled torch)")]


class HybridTrainPipe(Pipeline):
    def __init__(self, batch_size, data_dir, num_threads=4, device_id=0, crop=224, dali_cpu=False):
        super(HybridTrainPipe, self).__init__(batch_size, num_threads, device_id, seed=12 + device_id)
        self.input = ops.FileReader(file_root=data_dir, random_shuffle=True)
        dali_device = 'cpu' if dali_cpu else 'gpu'
        decoder_device = 'cpu' if dali_cpu else 'mixed'
        device_memory_padding = 211025920 if decoder_device == 'mixed' else 0
        host_memory_padding = 140544512 if decoder_device == 'mixed' else 0
        self.decode = ops.ImageDecoderRandomCrop(device=decoder_device, output_type=types.RGB,
                                                 device_memory_padding=device_memory_padding,
                                                 host_memory_padding=host_memory_padding,
                                                 random_aspect_ratio=[0.8, 1.25],
                                                 random_area=[0.6, 1.0],
                                                 num_attempts=100)
        self.res = ops.Resize(device=dali_device, resize_x=crop, resize_y=crop, interp_type=types.INTERP_TRIANGULAR)
        self.cmnp = ops.CropMirrorNormalize(device=dali_device,  # as written: "gpu"
                                            output_dtype=types.FLOAT,
                                            output_layout=types.NCHW,
                                            crop=(crop, crop),
                                            image_type=types.RGB,
                                            mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                            std=[0.229 * 255, 0.224 * 255, 0.225 * 255])
        self.coin = ops.CoinFlip(probability=0.5)
        self.dali_cpu = dali_cpu

    def define_graph(self):
        rng = self.coin()
        self.jpegs, self.labels = self.input(name="Reader")
        images = self.decode(self.jpegs)
        images = self.res(images)
        output = self.cmnp(images if self.dali_cpu else images.gpu(), mirror=rng)
        return [output, self.labels]


class HybridValPipe(Pipeline):
    def __init__(self, batch_size, data_dir, num_threads=4, device_id=0, crop=224, size=224, dali_cpu=False):
        super(HybridValPipe, self).__init__(batch_size, num_threads, device_id, seed=12 + device_id)
        self.input = ops.FileReader(file_root=data_dir, random_shuffle=False)
        self.decode = ops.ImageDecoder(device="cpu" if dali_cpu else "mixed", output_type=types.RGB)
        self.res = ops.Resize(device="cpu" if dali_cpu else "gpu", resize_shorter=size,
                              interp_type=types.INTERP_TRIANGULAR)
        self.cmnp = ops.CropMirrorNormalize(device="cpu" if dali_cpu else "gpu",
                                            output_dtype=types.FLOAT,
                                            output_layout=types.NCHW,
                                            crop=(crop, crop),
                                            image_type=types.RGB,
                                            mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                            std=[0.229 * 255, 0.224 * 255, 0.225 * 255])

    def define_graph(self):
        self.jpegs, self.labels = self.input(name="Reader")
        images = self.decode(self.jpegs)
        images = self.res(images)
        output = self.cmnp(images)
        return [output, self.labels]


class MyPipe(Pipeline):
    def __init__(self, fn, batch_size=1, num_threads=1, device_id=0, crop=224, size=224, dali_cpu=False):
        super(MyPipe, self).__init__(batch_size, num_threads, device_id)
        self.fn = fn  # the snippet reads a global named fn; here the path is kept on the pipeline
        self.input = ops.ExternalSource()
        self.decode = ops.ImageDecoder(device="cpu" if dali_cpu else "mixed", output_type=types.RGB)
        self.res = ops.Resize(device="cpu" if dali_cpu else "gpu", resize_shorter=size, interp_type=types.INTERP_NN)
        self.cmnp = ops.CropMirrorNormalize(device="cpu" if dali_cpu else "gpu",
                                            output_dtype=types.FLOAT,
                                            output_layout=types.NCHW,
                                            crop=(crop, crop),
                                            image_type=types.RGB,
                                            mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                            std=[0.229 * 255, 0.224 * 255, 0.225 * 255])

    def define_graph(self):
        self.jpegs = self.input()
        images = self.decode(self.jpegs)
        images = self.res(images)
        output = self.cmnp(images)
        return output

    def iter_setup(self):
        images = []
        fp = open(self.fn, 'rb')
        images.append(np.frombuffer(fp.read(), dtype=np.uint8))
        fp.close()
        self.feed_input(self.jpegs, images)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("imagenet"))
    make_dataset(os.path.join(root, "train"), classes=3, per_class=3, size=(240, 300))
    make_dataset(os.path.join(root, "val"), classes=3, per_class=2, size=(240, 300), seed=1)
    return root


def train(train_loader, model=None):
    seen = 0
    for batch_idx, data in enumerate(train_loader):
        inputs = data[0]["data"]
        labels = data[0]["label"].squeeze().long() if model is None else data[0]["label"].squeeze().cuda().long()
        if model is not None:
            outputs = model(inputs)
            assert inputs.is_cuda and outputs.shape == (BATCH_SIZE, 3)
        assert inputs.shape == (BATCH_SIZE, 3, 224, 224) and inputs.dtype == torch.float32
        assert labels.shape == (BATCH_SIZE,) and set(labels.tolist()) <= {0, 1, 2}
        seen += 1
    return seen


@pytest.mark.parametrize("dali_cpu", [True, pytest.param(False, marks=on_the_gpu)], ids=["cpu", "gpu"])
def test_train_and_val_pipelines(data_dir, dali_cpu):
    model = None if dali_cpu else torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                                      torch.nn.Linear(3, 3)).cuda()
    pipe = HybridTrainPipe(batch_size=BATCH_SIZE, data_dir=os.path.join(data_dir, 'train'), dali_cpu=dali_cpu)
    pipe.build()
    NUM_TRAIN = pipe.epoch_size("Reader")
    train_loader = DALIClassificationIterator(pipe, size=NUM_TRAIN)
    pipe = HybridValPipe(batch_size=BATCH_SIZE, data_dir=os.path.join(data_dir, 'val'), dali_cpu=dali_cpu)
    pipe.build()
    NUM_VAL = pipe.epoch_size("Reader")
    val_loader = DALIClassificationIterator(pipe, size=NUM_VAL)
    assert (NUM_TRAIN, NUM_VAL) == (9, 6)
    assert train(train_loader, model) == len(train_loader) == math.ceil(9 / BATCH_SIZE)
    assert train(val_loader, model) == len(val_loader) == math.ceil(6 / BATCH_SIZE)
    # FILL with a size: the 12 - 9 = 3 samples read into the next epoch count towards it (api.md §15.2),
    # which then needs 2 batches of 4 (counter 3 -> 7 -> 11 >= 9)
    assert train(train_loader, model) == 2


@pytest.mark.parametrize("dali_cpu", [True, pytest.param(False, marks=on_the_gpu)], ids=["cpu", "gpu"])
def test_prediction_pipeline_fed_from_iter_setup(data_dir, dali_cpu):
    path = os.path.join(data_dir, "val", "class_000", "img_00000.jpg")
    pipe = MyPipe(path, dali_cpu=dali_cpu)
    pipe.build()
    dali_iterator = DALIGenericIterator(pipe, ['images'], 1)
    img = dali_iterator.next()[0]['images']
    assert img.shape == (1, 3, 224, 224) and img.dtype == torch.float32 and img.is_cuda == (not dali_cpu)
