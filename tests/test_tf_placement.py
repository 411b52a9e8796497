"""penstock.plugin.tf: where a DALIDataset lives and how each output gets there (_placement.place),
every case without a GPU; the GPU path itself runs in tests/test_tf_gpu.py."""
from __future__ import annotations

import pytest
from _util import installed_or_skip  # noqa: E402

tf = installed_or_skip("tensorflow")

from penstock_tensorflow._placement import (DLPACK, HOST, PEER, TO_GPU, TO_HOST, DeviceMismatchError,
                                            place)


def placed(outputs, scope=(None, None), device_id=0, tf_gpus=1, fail=True):
    return place(outputs, scope_type=scope[0], scope_index=scope[1], device_id=device_id, tf_gpus=tf_gpus,
                 fail_on_device_mismatch=fail)


def test_cpu_outputs_stay_on_the_cpu():
    for gpus in (0, 2):
        for scope in ((None, None), ("CPU", 0), ("CPU", None)):
            p = placed(["cpu", "cpu"], scope, tf_gpus=gpus)
            assert (p.device, p.transfers, p.warnings, p.on_gpu) == ("/CPU:0", (HOST, HOST), (), False)
    # a CPU-only pipeline of a dataset created with a device_id (DALI's default 0) or without
    assert placed(["cpu"], device_id=None).device == "/CPU:0"


def test_gpu_outputs_land_on_the_pipelines_gpu_without_a_copy():
    assert placed(["gpu", "gpu"], device_id=1, tf_gpus=2) == placed(["gpu", "gpu"], ("GPU", 1), 1, 2)
    p = placed(["gpu", "gpu"], device_id=1, tf_gpus=2)
    assert (p.device, p.transfers, p.on_gpu) == ("/GPU:1", (DLPACK, DLPACK), True)
    assert placed(["gpu"], device_id=None).device == "/GPU:0"  # None: the current CUDA device
    # tf.device('/GPU') without an index: the pipeline's GPU
    assert placed(["gpu"], ("GPU", None), device_id=1, tf_gpus=2).transfers == (DLPACK,)


def test_a_dataset_on_another_gpu_gets_one_device_copy():
    p = placed(["gpu"], ("GPU", 0), device_id=1, tf_gpus=2)
    assert (p.device, p.transfers) == ("/GPU:0", (PEER,))


@pytest.mark.parametrize("outputs, scope, dataset, dali, index", [
    (["gpu", "gpu"], ("CPU", 0), "CPU", "GPU", 0),
    (["cpu", "gpu"], ("GPU", 0), "GPU", "CPU", 0),
    (["gpu", "cpu"], (None, None), "GPU", "CPU", 1),  # a GPU output puts the dataset on the GPU
])
def test_mismatch_is_dalis_internal_error_naming_the_output(outputs, scope, dataset, dali, index):
    msg = f"TF device and DALI device mismatch. TF device: {dataset}, DALI device: {dali} for output {index}"
    with pytest.raises(tf.errors.InternalError, match=msg):
        placed(outputs, scope)
    with pytest.raises(RuntimeError, match=msg):
        placed(outputs, scope)


def test_tolerated_mismatch_copies_to_the_datasets_device_with_a_warning():
    p = placed(["gpu", "cpu"], ("CPU", 0), fail=False)
    assert (p.device, p.transfers) == ("/CPU:0", (TO_HOST, HOST))
    assert len(p.warnings) == 1 and "DALI device: GPU for output 0" in p.warnings[0]
    assert "copied to the host" in p.warnings[0]
    p = placed(["gpu", "cpu"], fail=False)
    assert (p.device, p.transfers) == ("/GPU:0", (DLPACK, TO_GPU))
    assert len(p.warnings) == 1 and "DALI device: CPU for output 1" in p.warnings[0]
    assert "copied to the GPU" in p.warnings[0]


def test_gpu_scope_without_a_tensorflow_gpu_falls_back_to_the_cpu():
    # TensorFlow soft-places a tf.device('/GPU:0') scope on the CPU when it has no GPU, as it does
    # DALI's op: CPU outputs match, GPU outputs are a mismatch that says why.
    assert placed(["cpu"], ("GPU", 0), tf_gpus=0).transfers == (HOST,)
    with pytest.raises(DeviceMismatchError, match=r"TF device: CPU, DALI device: GPU for output 0 .*sees no GPU"):
        placed(["gpu"], ("GPU", 0), tf_gpus=0)
    assert placed(["gpu"], ("GPU", 0), tf_gpus=0, fail=False).transfers == (TO_HOST,)


def test_gpu_outputs_need_a_tensorflow_gpu():
    with pytest.raises(RuntimeError, match="output 1 of the pipeline is on the GPU, but TensorFlow sees no GPU"):
        placed(["cpu", "gpu"], tf_gpus=0, fail=False)
    with pytest.raises(RuntimeError, match=r"outputs are on GPU 2 \(device_id\), but TensorFlow sees 2 GPU"):
        placed(["gpu"], device_id=2, tf_gpus=2)
    with pytest.raises(RuntimeError, match=r"placed on /GPU:3 by tf.device, but TensorFlow sees 2 GPU"):
        placed(["gpu"], ("GPU", 3), tf_gpus=2)
