"""The reference document /work/shared/reference/003 ("getting started with JAX and DALI"), cell by
cell, with only its imports changed (``nvidia.dali`` -> ``penstock``).

``run_reference(image_dir, gpu=True)`` is the document as written (mixed decoding, ``.gpu()``,
``device_id=1``, sharding over the GPUs); ``gpu=False`` is its CPU form, where the decoder runs
with ``device="cpu"`` and the ``.gpu()`` calls are left out (marked "CPU form" below). Besides
the imports, three things differ from the text, all in the notebook's display code: matplotlib
is not part of the test set, so ``show_image`` gathers the images to numpy as ``imshow`` would;
``Array.device()`` and ``Array.device_buffers`` left JAX (0.4.3x), their successors are
``Array.device`` and ``Array.addressable_shards``; ``%%timeit`` cells run their loop once.
The dataset is generated: 21 JPEGs in class folders, like the document's image directory.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from _util import installed_or_skip  # noqa: E402

jax = installed_or_skip("jax")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from make_sample_data import make_dataset  # noqa: E402


def run_reference(image_dir: str, gpu: bool) -> dict:
    """The document's cells in order; returns what its cells print."""
    printed: dict = {}
    decoder = "mixed" if gpu else "cpu"  # CPU form: device="cpu" where the document says "mixed"

    def on_gpu(node):
        return node.gpu() if gpu else node  # CPU form: no .gpu()

    # [2]
    import penstock.fn as fn
    from penstock.plugin.jax import data_iterator

    @data_iterator(output_map=["images", "labels"], reader_name="image_reader")
    def iterator_fn():
        jpegs, labels = fn.readers.file(file_root=image_dir, name="image_reader")
        images = fn.decoders.image(jpegs, device=decoder)
        images = fn.resize(images, resize_x=256, resize_y=256)
        return images, labels

    iterator = iterator_fn(batch_size=8)
    batch = next(iterator)  # noqa: F841

    # [3]
    def simple_pipeline():
        jpegs, labels = fn.readers.file(file_root=image_dir, name="image_reader")
        images = fn.decoders.image(jpegs)
        images = fn.resize(images, resize_x=256, resize_y=256)
        return images, labels

    # [5], [6], [7]
    iterator_fn = data_iterator(simple_pipeline, output_map=["images", "labels"], reader_name="image_reader")
    iterator = iterator_fn(batch_size=1)
    output = next(iterator)
    printed["keys"] = list(output.keys())
    printed["types"] = (type(output["images"]), type(output["labels"]))
    printed["shapes_1"] = (output["images"].shape, output["labels"].shape)

    # [8] - [10] (display code: see the module docstring)
    def show_image(images):
        return [np.asarray(images[j]) for j in range(images.shape[0])]

    image = output["images"]
    shown = show_image(image[:1])
    printed["label_0"] = np.asarray(output["labels"][0]).tolist()
    output = next(iterator)
    printed["label_1"] = np.asarray(output["labels"][0]).tolist()

    # [11], [12]
    @data_iterator(output_map=["images", "labels"], reader_name="image_reader")
    def iterator_fn():
        jpegs, labels = fn.readers.file(file_root=image_dir, name="image_reader")
        images = fn.decoders.image(jpegs)
        images = fn.resize(images, resize_x=256, resize_y=256)
        return images, labels

    iterator = iterator_fn(batch_size=1)
    printed["size"] = len(iterator)
    printed["batch_ids"] = [batch_id for batch_id, batch in enumerate(iterator)]

    # [13] - [16]
    iterator = iterator_fn(batch_size=8)
    batch = next(iterator)
    printed["shapes_8"] = (batch["images"].shape, batch["labels"].shape)
    shown = show_image(batch["images"])
    printed["shown"] = len(shown)

    # [17]
    printed["cpu_device"] = batch["images"].device

    # [18], [19]
    @data_iterator(output_map=["images", "labels"], reader_name="image_reader")
    def iterator_fn():
        jpegs, labels = fn.readers.file(file_root=image_dir, name="image_reader")
        images = fn.decoders.image(jpegs)
        images = on_gpu(images)
        images = fn.resize(images, resize_x=256, resize_y=256)
        return images, labels

    iterator = iterator_fn(batch_size=8)
    if gpu and len(jax.devices("gpu")) > 1:  # the document's machine has two GPUs
        iterator = iterator_fn(batch_size=1, device_id=1)
        batch = next(iterator)
        printed["device_id_1"] = batch["images"].device

    # [20], [21]
    @data_iterator(output_map=["images", "labels"], reader_name="image_reader")
    def iterator_fn():
        jpegs, labels = fn.readers.file(file_root=image_dir, name="image_reader")
        images = fn.decoders.image(jpegs, device=decoder)
        images = fn.resize(images, resize_x=256, resize_y=256)
        return images, labels

    iterator = iterator_fn(batch_size=8)
    batch = next(iterator)
    printed["mixed_devices"] = (batch["images"].device, batch["labels"].device)

    # [22]
    @data_iterator(output_map=["images", "labels"], reader_name="image_reader")
    def iterator_fn():
        jpegs, labels = fn.readers.file(file_root=image_dir, name="image_reader", random_shuffle=True)
        images = fn.decoders.image(jpegs, device=decoder)
        images = fn.resize(images, resize_x=256, resize_y=256)
        return images, labels

    iterator = iterator_fn(batch_size=8, seed=0)
    batch = next(iterator)
    printed["shuffled_labels"] = np.asarray(batch["labels"]).reshape(-1).tolist()
    show_image(batch["images"])

    # [23]
    @data_iterator(output_map=["images", "labels"], reader_name="image_reader")
    def iterator_fn():
        jpegs, labels = fn.readers.file(file_root=image_dir, name="image_reader", random_shuffle=True)
        images = fn.decoders.image(jpegs, device=decoder)
        angle = fn.random.uniform(range=(-10.0, 10.0))
        images = fn.rotate(images, angle=angle, fill_value=0)
        images = fn.resize(images, resize_x=256, resize_y=256)
        return images, labels

    iterator = iterator_fn(batch_size=8, seed=0)
    batch = next(iterator)
    printed["rotated_shape"] = batch["images"].shape
    show_image(batch["images"])

    # [24]
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(jax.devices(), axis_names=("batch"))
    sharding = NamedSharding(mesh, PartitionSpec("batch"))
    printed["sharding"] = sharding

    # [26]
    @data_iterator(output_map=["images", "labels"], reader_name="image_reader", sharding=sharding)
    def iterator_fn(num_shards=1, shard_id=0):
        jpegs, labels = fn.readers.file(file_root=image_dir, name="image_reader", num_shards=num_shards,
                                        shard_id=shard_id)
        images = fn.decoders.image(jpegs, device=decoder)
        angle = fn.random.uniform(range=(-10.0, 10.0))
        images = fn.rotate(images, angle=angle, fill_value=0)
        images = fn.resize(images, resize_x=256, resize_y=256)
        return images, on_gpu(labels)

    # [27], [28]
    iterator = iterator_fn(batch_size=8)
    batch = next(iterator)
    images = batch["images"]
    printed["sharded"] = (images.shape, images.devices(), images.sharding)
    printed["sharded_labels"] = batch["labels"].sharding

    # [29]
    jax.debug.visualize_array_sharding(images.ravel())

    # [30]
    printed["shard_buffers"] = [(s.device, s.data.shape) for s in images.addressable_shards]

    # [31]
    show_image(batch["images"])

    # [32] - [36]
    def run_iterator(iterator, epoch_num=10):
        for epoch in range(epoch_num):
            for batch in iterator:
                pass

    for threads in (1, 8):
        iterator = iterator_fn(batch_size=64, num_threads=threads)
        run_iterator(iterator, epoch_num=2)

    # [37]
    printed["type"] = type(iterator)

    # [38]
    from penstock.pipeline import pipeline_def

    @pipeline_def
    def simple_pipeline():
        jpegs, labels = fn.readers.file(file_root=image_dir, name="image_reader")
        images = fn.decoders.image(jpegs, device=decoder)
        images = fn.resize(images, resize_x=256, resize_y=256)
        return images, labels

    pipeline = simple_pipeline(batch_size=8, num_threads=1, device_id=0)
    printed["pipeline_type"] = type(pipeline)

    # [39], [40]
    from penstock.plugin.jax import DALIGenericIterator

    iterator = DALIGenericIterator(pipeline, output_map=["images", "labels"], reader_name="image_reader")
    batch = next(iterator)
    printed["direct_devices"] = (batch["images"].device, batch["labels"].device)
    printed["direct_type"] = type(iterator)
    return printed


@pytest.fixture(scope="module")
def image_dir(tmp_path_factory):
    return make_dataset(str(tmp_path_factory.mktemp("images")), classes=3, per_class=7, size=(120, 160))


def check(printed: dict, gpu: bool) -> None:
    from penstock.pipeline import Pipeline
    from penstock.plugin.jax import DALIGenericIterator

    host = jax.local_devices(backend="cpu")[0]
    image_device = jax.devices("gpu")[0] if gpu else host
    assert printed["keys"] == ["images", "labels"]
    assert all(issubclass(t, jax.Array) for t in printed["types"])
    assert printed["shapes_1"] == ((1, 256, 256, 3), (1, 1))
    assert printed["label_0"] == [0] and printed["label_1"] == [0]
    assert printed["size"] == 21 and printed["batch_ids"] == list(range(21))
    assert printed["shapes_8"] == ((8, 256, 256, 3), (8, 1)) and printed["shown"] == 8
    assert printed["cpu_device"] == host
    if "device_id_1" in printed:
        assert printed["device_id_1"] == jax.devices("gpu")[1]
    assert printed["mixed_devices"] == (image_device, host)
    assert printed["shuffled_labels"] != [0] * 7 + [1]  # the files' order, which random_shuffle changes
    assert printed["rotated_shape"] == (8, 256, 256, 3)
    devices = jax.devices()
    shape, where, sharding = printed["sharded"]
    assert shape == (8, 256, 256, 3) and where == set(devices) and sharding == printed["sharding"]
    assert printed["sharded_labels"] == printed["sharding"]
    assert printed["shard_buffers"] == [(d, (8 // len(devices), 256, 256, 3)) for d in devices]
    assert printed["type"] is DALIGenericIterator and printed["direct_type"] is DALIGenericIterator
    assert printed["pipeline_type"] is Pipeline
    assert printed["direct_devices"] == (image_device, host)


def test_reference_cpu_form(image_dir):
    check(run_reference(image_dir, gpu=False), gpu=False)


@pytest.mark.gpu
def test_reference_as_written(image_dir):
    from penstock import _cuda
    from test_jax_gpu import GPUS
    if not (_cuda.available() and GPUS):
        pytest.skip("needs penstock's GPU backend and a CUDA JAX")
    check(run_reference(image_dir, gpu=True), gpu=True)
