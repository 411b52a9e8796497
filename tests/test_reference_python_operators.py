"""The reference document 000_a4477c365b081423 (Python operators on GPU data), run as written
with only its imports changed (GPU), and its CPU form (numpy for CuPy, CPU devices)."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
from make_sample_data import make_dataset  # noqa: E402


@pytest.fixture(scope="module")
def image_dir(tmp_path_factory):
    return make_dataset(str(tmp_path_factory.mktemp("images")), classes=2, per_class=4, size=(120, 160))


def _unswap(out1, out2):
    """edit_images swaps the two images outside a centred ellipse: recover both inputs."""
    h, w, _ = out1.shape
    y, x = np.ogrid[0:h, 0:w]
    mask = (x - w / 2) ** 2 + (y - h / 2) ** 2 > h * w / 9
    res1 = np.where(mask[..., None], out2, out1)
    res2 = np.where(mask[..., None], out1, out2)
    return res1, res2, mask


def _mix_reference(x, y):
    z = x.copy().reshape(-1)
    i = np.arange(z.size)
    z[i % 3 == 0] = y.reshape(-1)[i % 3 == 0]
    return z.reshape(x.shape)


def _check(ims1, ims2, ims3, ims_dl, batch_size):
    for j in range(batch_size):
        o1, o2, o3, od = (np.asarray(t.at(j)) for t in (ims1, ims2, ims3, ims_dl))
        assert o1.shape == (300, 300, 3) and o1.dtype == np.uint8
        res1, res2, mask = _unswap(o1, o2)
        assert mask.any() and (~mask).any()
        np.testing.assert_array_equal(o3, _mix_reference(res1, res2))
        np.testing.assert_array_equal(od, o3)  # same seed, same images: same result


@pytest.mark.gpu
def test_reference_document_as_written(image_dir):
    cupy = pytest.importorskip("cupy")
    if not cupy.is_available():
        pytest.skip("needs a CUDA device")
    from penstock.pipeline import Pipeline
    import penstock.fn as fn
    import penstock.types as types

    def edit_images(image1, image2):
        assert image1.shape == image2.shape
        h, w, c = image1.shape
        y, x = cupy.ogrid[0:h, 0:w]
        mask = (x - w / 2) ** 2 + (y - h / 2) ** 2 > h * w / 9
        result1 = cupy.copy(image1)
        result1[mask] = image2[mask]
        result2 = cupy.copy(image2)
        result2[mask] = image1[mask]
        return result1, result2

    mix_channels_kernel = cupy.ElementwiseKernel(
        "uint8 x, uint8 y", "uint8 z", "z = (i % 3) ? x : y", "mix_channels"
    )
    batch_size = 4
    python_function_pipe = Pipeline(
        batch_size=batch_size,
        num_threads=4,
        device_id=0,
        exec_async=False,
        exec_pipelined=False,
        seed=99,
    )
    with python_function_pipe:
        input1, _ = fn.readers.file(file_root=image_dir, random_shuffle=True)
        input2, _ = fn.readers.file(file_root=image_dir, random_shuffle=True)
        im1, im2 = fn.decoders.image(
            [input1, input2], device="mixed", output_type=types.RGB
        )
        res1, res2 = fn.resize([im1, im2], device="gpu", resize_x=300, resize_y=300)
        out1, out2 = fn.python_function(
            res1, res2, device="gpu", function=edit_images, num_outputs=2
        )
        out3 = fn.python_function(
            res1, res2, device="gpu", function=mix_channels_kernel
        )
        python_function_pipe.set_outputs(out1, out2, out3)
    python_function_pipe.build()
    ims1, ims2, ims3 = python_function_pipe.run()

    def mix_channels_wrapper(tensor1, tensor2):
        array1 = cupy.fromDlpack(tensor1)
        array2 = cupy.fromDlpack(tensor2)
        result = mix_channels_kernel(array1, array2)
        cupy.cuda.get_current_stream().synchronize()
        return result.toDlpack()

    dltensor_function_pipe = Pipeline(
        batch_size=batch_size,
        num_threads=4,
        device_id=0,
        exec_async=False,
        exec_pipelined=False,
        seed=99,
    )
    with dltensor_function_pipe:
        input1, _ = fn.readers.file(file_root=image_dir, random_shuffle=True)
        input2, _ = fn.readers.file(file_root=image_dir, random_shuffle=True)
        im1, im2 = fn.decoders.image(
            [input1, input2], device="mixed", output_type=types.RGB
        )
        res1, res2 = fn.resize([im1, im2], device="gpu", resize_x=300, resize_y=300)
        out = fn.dl_tensor_python_function(
            res1,
            res2,
            device="gpu",
            function=mix_channels_wrapper,
            synchronize_stream=True,
            batch_processing=False,
        )
        dltensor_function_pipe.set_outputs(out)
    dltensor_function_pipe.build()
    (ims,) = dltensor_function_pipe.run()
    _check(ims1.as_cpu(), ims2.as_cpu(), ims3.as_cpu(), ims.as_cpu(), batch_size)


def test_reference_document_cpu_form(image_dir):
    from penstock.pipeline import Pipeline
    import penstock.fn as fn
    import penstock.types as types
    from penstock.tensors import TensorCPU

    def edit_images(image1, image2):
        assert image1.shape == image2.shape
        h, w, c = image1.shape
        y, x = np.ogrid[0:h, 0:w]
        mask = (x - w / 2) ** 2 + (y - h / 2) ** 2 > h * w / 9
        result1 = np.copy(image1)
        result1[mask] = image2[mask]
        result2 = np.copy(image2)
        result2[mask] = image1[mask]
        return result1, result2

    def mix_channels_kernel(x, y):  # what the CuPy ElementwiseKernel computes, in numpy
        z = np.array(x)
        z[..., 0] = y[..., 0]  # (i % 3) == 0 on HWC data is channel 0
        return z

    def mix_channels_wrapper(tensor1, tensor2):
        array1 = np.asarray(TensorCPU(tensor1))
        array2 = np.asarray(TensorCPU(tensor2))
        return mix_channels_kernel(array1, array2).__dlpack__()

    batch_size = 4
    pipes = []
    for use_dlpack in (False, True):
        pipe = Pipeline(batch_size=batch_size, num_threads=4, device_id=None, exec_async=False,
                        exec_pipelined=False, seed=99)
        with pipe:
            input1, _ = fn.readers.file(file_root=image_dir, random_shuffle=True)
            input2, _ = fn.readers.file(file_root=image_dir, random_shuffle=True)
            im1, im2 = fn.decoders.image([input1, input2], device="cpu", output_type=types.RGB)
            res1, res2 = fn.resize([im1, im2], device="cpu", resize_x=300, resize_y=300)
            if use_dlpack:
                pipe.set_outputs(fn.dl_tensor_python_function(
                    res1, res2, device="cpu", function=mix_channels_wrapper, synchronize_stream=True,
                    batch_processing=False))
            else:
                out1, out2 = fn.python_function(res1, res2, device="cpu", function=edit_images, num_outputs=2)
                out3 = fn.python_function(res1, res2, device="cpu", function=mix_channels_kernel)
                pipe.set_outputs(out1, out2, out3)
        pipe.build()
        pipes.append(pipe)
    ims1, ims2, ims3 = pipes[0].run()
    (ims,) = pipes[1].run()
    _check(ims1.as_cpu(), ims2.as_cpu(), ims3.as_cpu(), ims.as_cpu(), batch_size)
