"""penstock.plugin.pytorch.experimental.proxy: a pipeline run on batches a torch DataLoader collects."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import penstock.plugin.pytorch.experimental.proxy as dali_proxy  # noqa: E402
from penstock import fn, pipeline_def, types  # noqa: E402
from penstock.plugin import pytorch as penstock_pytorch  # noqa: E402


@pipeline_def(batch_size=4, num_threads=1, device_id=None)
def scale_pipe():
    images = fn.external_source(name="images")
    offsets = fn.external_source(name="offsets")
    return fn.cast(images, dtype=types.FLOAT) * 0.5 + offsets


class Samples(torch.utils.data.Dataset):
    def __init__(self, transform, n=10):
        self.transform, self.n = transform, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        image = np.full((2, 3), i * 2, np.uint8)
        return self.transform(image, offsets=np.float32(i)), i


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_batches_are_pipeline_outputs(num_workers):
    with dali_proxy.DALIServer(scale_pipe()) as server:
        loader = dali_proxy.DataLoader(server, Samples(server.proxy), batch_size=4, num_workers=num_workers)
        seen = []
        for data, label in loader:
            assert isinstance(data, torch.Tensor) and data.dtype == torch.float32
            expected = np.stack([np.full((2, 3), i * 2 * 0.5 + i, np.float32) for i in label.tolist()])
            np.testing.assert_array_equal(data.numpy(), expected)
            seen += label.tolist()
    assert seen == list(range(10))


def test_proxy_records_inputs_and_checks_its_signature():
    server = dali_proxy.DALIServer(scale_pipe())
    ref = server.proxy(np.zeros(2), offsets=1.0)
    assert isinstance(ref, dali_proxy.DALIOutputSampleRef) and len(ref.inputs) == 2
    with pytest.raises(TypeError):
        server.proxy(np.zeros(2))
    with pytest.raises(RuntimeError, match="not running"):
        server.produce_data(ref)


def test_plugin_module_is_the_same_object_under_both_names():
    import penstock_pytorch.experimental.proxy as direct
    assert direct is dali_proxy and penstock_pytorch.experimental.proxy is dali_proxy


def _read_filepath(path):
    return np.frombuffer(path.encode(), dtype=np.int8)


class ImageFolder(torch.utils.data.Dataset):
    """What the ResNet-50 example takes from torchvision.datasets.ImageFolder: (loader(path), class
    index) pairs of <root>/<class>/<file>, the sample passed through ``transform``."""

    def __init__(self, root, transform, loader):
        import os
        classes = sorted(os.listdir(root))
        self.samples = [(os.path.join(root, c, f), k) for k, c in enumerate(classes)
                        for f in sorted(os.listdir(os.path.join(root, c)))]
        self.transform, self.loader = transform, loader

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, label = self.samples[i]
        return self.transform(self.loader(path)), label


@pipeline_def(exec_dynamic=True)
def resnet50_proxy_pipeline(crop, size, is_training):
    # DALI's ResNet-50 example's dali_proxy pipeline in its CPU form (no .gpu())
    filepaths = fn.external_source(name="images", no_copy=True)
    images = fn.io.file.read(filepaths)
    if is_training:
        images = fn.decoders.image_random_crop(images, device="cpu", output_type=types.RGB,
                                               preallocate_width_hint=0, preallocate_height_hint=0,
                                               random_aspect_ratio=[0.8, 1.25], random_area=[0.1, 1.0],
                                               num_attempts=100)
        images = fn.resize(images, resize_x=crop, resize_y=crop, interp_type=types.INTERP_TRIANGULAR)
        mirror = fn.random.coin_flip(probability=0.5)
    else:
        images = fn.decoders.image(images, device="cpu", output_type=types.RGB)
        images = fn.resize(images, size=size, mode="not_smaller", interp_type=types.INTERP_TRIANGULAR)
        mirror = False
    return fn.crop_mirror_normalize(images, dtype=types.FLOAT, output_layout="CHW", crop=(crop, crop),
                                    mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
                                    std=[0.229 * 255, 0.224 * 255, 0.225 * 255], mirror=mirror)


@pytest.mark.parametrize("is_training", [True, False])
def test_resnet50_examples_proxy_path_reads_files_named_by_the_dataset(tmp_path, is_training):
    from PIL import Image
    rng = np.random.default_rng(3)
    for c in ("cat", "dog"):
        (tmp_path / c).mkdir()
        for k in range(3):
            Image.fromarray(rng.integers(0, 255, (30 + 4 * k, 40, 3), np.uint8)).save(tmp_path / c / f"{k}.jpg")
    pipe = resnet50_proxy_pipeline(batch_size=4, num_threads=2, device_id=None, seed=12, crop=16, size=20,
                                   is_training=is_training)
    with dali_proxy.DALIServer(pipe) as server:
        dataset = ImageFolder(str(tmp_path), transform=server.proxy, loader=_read_filepath)
        loader = dali_proxy.DataLoader(server, dataset, batch_size=4, shuffle=False, num_workers=2)
        batches = [(images.shape, labels.tolist()) for images, labels in loader]
    assert batches == [((4, 3, 16, 16), [0, 0, 0, 1]), ((2, 3, 16, 16), [1, 1])]


def test_batches_refer_to_pipeline_runs():
    server = dali_proxy.DALIServer(scale_pipe())
    batch = dali_proxy._collate([server.proxy(np.full(2, i, np.float32), offsets=float(i)) for i in range(3)])
    run = batch.pipe_run_ref
    assert isinstance(run, dali_proxy.DALIPipelineRunRef) and run.batch_id[0] == -1  # collated in this process
    assert not run.is_scheduled and not run.is_complete and len(batch) == 3
    with server:
        out = server.produce_data(batch)
    assert run.is_scheduled and run.is_complete and list(run.call_args) == server._names
    np.testing.assert_array_equal(out.numpy()[2], np.full(2, 2 * 0.5 + 2, np.float32))
