"""Where a ``DALIDataset`` lives and how each pipeline output gets there: one pure function.

As in DALI, the dataset has one device (TensorFlow's CPU or one of its GPUs) and every output
must be produced there: a mismatch is DALI's ``InternalError`` ("TF device and DALI device
mismatch...") naming the output, or, with ``fail_on_device_mismatch=False``, a warning and one
copy per batch to the dataset's device. The decision needs no GPU, so it is unit-tested on the CPU.

The dataset's device is the one ``tf.device`` names around its creation; without one, it is
``/GPU:<device_id>`` when the pipeline has a GPU output (the GPU the pipeline runs on, so the
hand-off is zero-copy) and the CPU otherwise. TensorFlow without a GPU soft-places a
``tf.device('/GPU:...')`` scope on the CPU, and so does this function (DALI's op lands on the CPU
kernel there too).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import tensorflow as tf

# How an output reaches the dataset's device.
HOST = "host"          # CPU output, CPU dataset: the host buffer, zero-copy where aligned (_outputs)
TO_HOST = "to_host"    # GPU output, CPU dataset (mismatch allowed): one device-to-host copy
DLPACK = "dlpack"      # GPU output, dataset on the pipeline's GPU: zero-copy through DLPack
PEER = "peer"          # GPU output, dataset on another GPU: DLPack, then one device-to-device copy
TO_GPU = "to_gpu"      # CPU output, GPU dataset (mismatch allowed): one host-to-device copy


class DeviceMismatchError(tf.errors.InternalError, RuntimeError):
    """DALI's error type for a dataset placed on another device than a pipeline output
    (``tf.errors.InternalError``); also a RuntimeError, which penstock raised before."""

    def __init__(self, message: str):
        super().__init__(None, None, message)


@dataclass(frozen=True)
class Placement:
    device: str                       # "/CPU:0" or "/GPU:<k>", TensorFlow's name for the dataset's device
    transfers: tuple[str, ...]        # per output: HOST, TO_HOST, DLPACK, PEER or TO_GPU
    warnings: tuple[str, ...] = field(default=())   # tolerated mismatches (fail_on_device_mismatch=False)

    @property
    def on_gpu(self) -> bool:
        return self.device.startswith("/GPU")


_NO_TF_GPU = ("TensorFlow sees no GPU (a CPU-only build such as tensorflow-cpu, or CUDA_VISIBLE_DEVICES "
              "hides them)")


def place(output_devices: Sequence[str], *, scope_type: str | None, scope_index: int | None,
          device_id: int | None, tf_gpus: int, fail_on_device_mismatch: bool) -> Placement:
    """The dataset's device and each output's transfer.

    ``output_devices``: "cpu"/"gpu" per pipeline output; ``scope_type``/``scope_index``: the
    enclosing ``tf.device`` ("CPU"/"GPU"/None, index or None); ``device_id``: the pipeline's GPU
    (None: the current CUDA device, 0); ``tf_gpus``: how many GPUs TensorFlow sees.
    """
    producer = 0 if device_id is None else device_id
    gpu_outputs = [i for i, d in enumerate(output_devices) if d == "gpu"]
    if scope_type == "GPU" and tf_gpus > 0:
        index = producer if scope_index is None else scope_index
        if index >= tf_gpus:
            raise RuntimeError(f"DALIDataset is placed on /GPU:{index} by tf.device, but TensorFlow sees "
                               f"{tf_gpus} GPU(s)")
        device = f"/GPU:{index}"
    elif scope_type is None and gpu_outputs:
        if tf_gpus == 0:
            raise RuntimeError(
                f"DALIDataset: output {gpu_outputs[0]} of the pipeline is on the GPU, but {_NO_TF_GPU}. End the "
                "pipeline with .cpu(), or place the dataset on the CPU (tf.device('/CPU:0') and "
                "fail_on_device_mismatch=False: one copy to the host per batch)")
        if producer >= tf_gpus:
            raise RuntimeError(f"DALIDataset: the pipeline's outputs are on GPU {producer} (device_id), but "
                               f"TensorFlow sees {tf_gpus} GPU(s); place the dataset with tf.device")
        device = f"/GPU:{producer}"
    else:  # a CPU scope, no scope and only CPU outputs, or a GPU scope soft-placed on the CPU
        device = "/CPU:0"
    on_gpu = device.startswith("/GPU")
    transfers, warnings = [], []
    for i, out in enumerate(output_devices):
        if (out == "gpu") != on_gpu:
            msg = (f"TF device and DALI device mismatch. TF device: {'GPU' if on_gpu else 'CPU'}, DALI device: "
                   f"{out.upper()} for output {i}")
            if scope_type == "GPU" and not on_gpu:
                msg += f" (the dataset's tf.device('/GPU') scope falls back to the CPU: {_NO_TF_GPU})"
            if fail_on_device_mismatch:
                raise DeviceMismatchError(msg)
            warnings.append(msg + ("; every batch of it is copied to the GPU" if on_gpu
                                   else "; every batch of it is copied to the host"))
            transfers.append(TO_GPU if on_gpu else TO_HOST)
        elif not on_gpu:
            transfers.append(HOST)
        else:
            transfers.append(DLPACK if device == f"/GPU:{producer}" else PEER)
    return Placement(device, tuple(transfers), tuple(warnings))
