"""Custom Python code inside a pipeline: python_function, dl_tensor_python_function and
torch_python_function, on the CPU (numpy) or, with --gpu, on the GPU (CuPy, torch CUDA).

Two readers feed pairs of images; both are decoded and resized; then
  * a per-sample function swaps the two images outside a centred ellipse (two outputs),
  * a per-batch function interleaves their channels (a cupy.ElementwiseKernel on the GPU),
  * a DLPack function does the same through torch, synchronizing its own work.

    python examples/python_operators.py              # CPU, makes sample JPEGs in a temp dir
    python examples/python_operators.py --gpu        # GPU (needs CuPy and a CUDA device)
"""
from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

from penstock import fn, pipeline_def, types

SIZE = 256


def swap_outside_ellipse(xp):
    """Per-sample function for array module ``xp`` (numpy or cupy): two images in, two out."""
    def swap(image1, image2):
        h, w, _ = image1.shape
        y, x = xp.ogrid[0:h, 0:w]
        outside = (x - w / 2) ** 2 + (y - h / 2) ** 2 > h * w / 9
        out1, out2 = xp.copy(image1), xp.copy(image2)
        out1[outside] = image2[outside]
        out2[outside] = image1[outside]
        return out1, out2
    return swap


def mix_channels(xp):
    """Per-batch function: channel 0 from the second image, channels 1-2 from the first."""
    if xp is np:
        def mix_batch(images1, images2):
            out = [np.array(a) for a in images1]
            for o, b in zip(out, images2):
                o[..., 0] = b[..., 0]
            return out
        return mix_batch
    kernel = xp.ElementwiseKernel("uint8 x, uint8 y", "uint8 z", "z = (i % 3) ? x : y", "mix_channels")
    return lambda images1, images2: [kernel(a, b) for a, b in zip(images1, images2)]


def torch_mix_wrapper(capsule1, capsule2):
    """DLPack in, DLPack out; the function finishes its own GPU work before returning."""
    import torch
    a, b = torch.utils.dlpack.from_dlpack(capsule1), torch.utils.dlpack.from_dlpack(capsule2)
    out = a.clone()
    out[..., 0] = b[..., 0]
    if out.is_cuda:
        torch.cuda.current_stream().synchronize()
    return torch.utils.dlpack.to_dlpack(out)


def build(image_dir: str, gpu: bool, batch_size: int):
    xp = __import__("cupy") if gpu else np
    decode_dev, dev = ("mixed", "gpu") if gpu else ("cpu", "cpu")

    @pipeline_def(batch_size=batch_size, num_threads=2, device_id=0 if gpu else None, seed=99)
    def pipe():
        jpegs1, _ = fn.readers.file(file_root=image_dir, random_shuffle=True)
        jpegs2, _ = fn.readers.file(file_root=image_dir, random_shuffle=True)
        im1, im2 = fn.decoders.image([jpegs1, jpegs2], device=decode_dev, output_type=types.RGB)
        res1, res2 = fn.resize([im1, im2], device=dev, resize_x=SIZE, resize_y=SIZE)
        out1, out2 = fn.python_function(res1, res2, device=dev, function=swap_outside_ellipse(xp),
                                        num_outputs=2, output_layouts=["HWC", "HWC"])
        mixed = fn.python_function(res1, res2, device=dev, function=mix_channels(xp), batch_processing=True,
                                   output_layouts="HWC")
        mixed_dl = fn.dl_tensor_python_function(res1, res2, device=dev, function=torch_mix_wrapper,
                                                batch_processing=False, synchronize_stream=True)
        return out1, out2, mixed, mixed_dl

    return pipe()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", help="image folder (default: a few generated JPEGs)")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--batch-size", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        image_dir = args.images
        if image_dir is None:
            from make_sample_data import make_dataset
            image_dir = make_dataset(os.path.join(tmp, "images"), classes=2, per_class=4, size=(300, 400))
        pipe = build(image_dir, args.gpu, args.batch_size)
        out1, out2, mixed, mixed_dl = (o.as_cpu() for o in pipe.run())
        same = all(np.array_equal(mixed.at(i), mixed_dl.at(i)) for i in range(len(mixed)))
        print(f"{len(out1)} image pairs, {out1.at(0).shape} {out1.dtype} layout {out1.layout()}; "
              f"python_function and dl_tensor_python_function mixes agree: {same}")


if __name__ == "__main__":
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
