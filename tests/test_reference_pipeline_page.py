"""The examples of the reference "Pipeline" page (shared/reference/002_2486f8f42ba7bbdf.txt), with
`nvidia.dali` replaced by `penstock` in the imports (`import penstock as dali`, so the page's
`dali.pickling.pickle_by_value` and `dali.pipeline.experimental` read as written) and the CPU form of
GPU placements (device="mixed"/"gpu" -> CPU, device_id=0 -> None, `.gpu()` dropped) so that they
run in CI. The page's callbacks read `sample_info.iter_idx`, which DALI's SampleInfo does not have
(DALI names it `iteration`); penstock's has both, so they run as the page writes them.
"""
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import penstock as dali
from penstock import Pipeline, fn, pipeline_def
from penstock.pipeline import do_not_convert
from penstock.types import DALIDataType

N = 4


@pytest.fixture
def image_dirs(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    for sub in ("image_dir", "mask_dir"):
        d = tmp_path / sub / "class0"
        d.mkdir(parents=True)
        for i in range(6):
            Image.fromarray(rng.integers(0, 255, (24 + i, 32, 3), dtype=np.uint8)).save(d / f"{i}.jpg")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_two_readers(image_dirs):
    @pipeline_def  # create a pipeline with processing graph defined by the function below
    def my_pipeline():
        """ Create a pipeline which reads images and masks, decodes the images and
            returns them. """
        img_files, labels = fn.readers.file(file_root="image_dir", seed=1)
        mask_files, _ = fn.readers.file(file_root="mask_dir", seed=1)
        images = fn.decoders.image(img_files, device="cpu")
        masks = fn.decoders.image(mask_files, device="cpu")
        return images, masks, labels

    pipe = my_pipeline(batch_size=4, num_threads=2, device_id=None)
    images, masks, labels = pipe.run()
    assert len(images) == len(masks) == len(labels) == 4
    assert images.at(0).shape[2] == 3


def test_argument_inputs(image_dirs):
    @pipeline_def
    def my_pipeline():
        img_files, labels = fn.readers.file(file_root='image_dir', device='cpu')
        images = fn.decoders.image(img_files, device='cpu')
        flip_param = fn.random.coin_flip(device='cpu')
        flipped = fn.flip(images, horizontal=flip_param, device='cpu')
        return flipped, labels, images, flip_param

    pipe = my_pipeline(batch_size=4, num_threads=2, device_id=None)
    flipped, labels, images, flip = pipe.run()
    for i in range(4):
        ref = images.at(i)[:, ::-1] if flip.at(i) else images.at(i)
        np.testing.assert_array_equal(flipped.at(i), ref)


def my_source():
    return [np.full((2,), i, np.int32) for i in range(N)], [np.full((3,), -i, np.float32) for i in range(N)]


def test_current_pipeline_with_statement():
    pipe = dali.Pipeline(batch_size=N, num_threads=3, device_id=None)
    with pipe:
        src = dali.ops.ExternalSource(my_source, num_outputs=2)
        a, b = src()
        pipe.set_outputs(a, b)
    a, b = pipe.run()
    np.testing.assert_array_equal(a.as_array(), np.arange(N)[:, None].repeat(2, 1))
    np.testing.assert_array_equal(b.as_array(), -np.arange(N)[:, None].repeat(3, 1))


def test_pipeline_def_returning_the_outputs_list():
    # The page calls this equivalent to the example above; DALI 2.4 takes the returned list as one
    # output holding DataNodes, an error naming the fix (as penstock does, in DALI's words)
    @dali.pipeline_def(batch_size=N, num_threads=3, device_id=None)
    def my_pipe(my_source):
        return dali.fn.external_source(my_source, num_outputs=2)

    with pytest.raises(TypeError, match=r"The output 0 contains a nested `DataNode`. Missing list/tuple expansion"):
        my_pipe(my_source)


def test_decorator_arguments_and_overrides(image_dirs):
    @pipeline_def
    def my_pipe(flip_vertical, flip_horizontal):
        ''' Creates a DALI pipeline, which returns flipped and original images '''
        data, _ = fn.readers.file(file_root="image_dir")
        img = fn.decoders.image(data, device="cpu")
        flipped = fn.flip(img, horizontal=flip_horizontal, vertical=flip_vertical)
        return flipped, img

    pipe = my_pipe(True, False, batch_size=32, num_threads=1, device_id=None)
    flipped, img = pipe.run()
    np.testing.assert_array_equal(flipped.at(0), img.at(0)[::-1])

    def my_generator():
        return [np.int32([k]) for k in range(my_generator.batch)]

    @pipeline_def(batch_size=32, num_threads=3, device_id=None)
    def my_pipe2():
        data = fn.external_source(source=my_generator)
        return data

    my_generator.batch = 128
    pipe = my_pipe2(batch_size=128)  # batch_size=128 overrides batch_size=32
    assert pipe.max_batch_size == 128
    assert len(pipe.run()[0]) == 128


def test_current_pipeline_inside_definition():
    seen = {}

    @pipeline_def()
    def my_pipe():
        pipe = Pipeline.current()
        with pytest.warns(DeprecationWarning):
            seen["batch_size"] = pipe.batch_size
        seen["num_threads"] = pipe.num_threads
        return fn.random.uniform()

    my_pipe(batch_size=42, num_threads=3, device_id=None)
    assert seen == {"batch_size": 42, "num_threads": 3}


def test_conditional_random_rotate(image_dirs):
    images_dir = "image_dir"

    @pipeline_def(enable_conditionals=True)
    def random_rotate():
        jpegs, _ = fn.readers.file(device="cpu", file_root=images_dir)
        images = fn.decoders.image(jpegs, device="cpu")
        do_rotate = fn.random.coin_flip(probability=0.25, dtype=DALIDataType.BOOL)
        if do_rotate:
            result = fn.rotate(images, angle=fn.random.uniform(range=(10, 30)), fill_value=0)
        else:
            result = images
        return result, images, do_rotate

    pipe = random_rotate(batch_size=6, num_threads=2, device_id=None, seed=2)
    result, images, flags = pipe.run()
    for i in range(6):
        if not flags.at(i):
            np.testing.assert_array_equal(result.at(i), images.at(i))
        else:  # rotated by 10-30 degrees without keep_size: a larger canvas
            assert result.at(i).shape != images.at(i).shape


@do_not_convert
def source_factory(size):
    def source_fun(sample_info):
        return np.full(size, sample_info.iter_idx)
    return source_fun


def source_fun(sample_info):
    return np.full((2, 2), sample_info.iter_idx)


def test_callback_defined_outside_is_not_converted():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        return fn.external_source(source=source_fun, batch=False)

    p = pipe(batch_size=2, num_threads=1, device_id=None)
    for it in range(2):
        np.testing.assert_array_equal(p.run()[0].as_array(), np.full((2, 2, 2), it))


def test_do_not_convert_examples_parallel():
    @pipeline_def(enable_conditionals=True)
    def pipe_converted():

        def source_factory(size):
            def source_fun(sample_info):
                return np.full(size, sample_info.iter_idx)
            return source_fun

        source = source_factory(size=(2, 1))
        return fn.external_source(source=source, parallel=True, batch=False)

    @pipeline_def(enable_conditionals=True)
    def pipe():
        source = source_factory(size=(2, 1))
        return fn.external_source(source=source, parallel=True, batch=False)

    for factory in (pipe_converted, pipe):
        p = factory(batch_size=2, num_threads=1, device_id=None, py_num_workers=1)
        np.testing.assert_array_equal(p.run()[0].as_array(), np.zeros((2, 2, 1)))


@dali.pickling.pickle_by_value
def by_value(sample_info):
    return np.int32([sample_info.idx_in_epoch + by_value_offset])


by_value_offset = 10  # a global the function reads: sent with it, by value


def test_pickle_by_value():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, py_start_method="spawn", py_num_workers=1)
    def create_pipeline():
        return fn.external_source(by_value, batch=False, parallel=True)

    np.testing.assert_array_equal(create_pipeline().run()[0].as_array(), [[10], [11]])


def test_dill_as_the_callback_pickler():
    import dill

    @pipeline_def(py_callback_pickler=dill, batch_size=2, num_threads=1, device_id=None, py_start_method="spawn")
    def create_pipeline():
        src = fn.external_source(
            lambda sample_info: np.int32([42]),
            batch=False,
            parallel=True,
        )
        return src

    np.testing.assert_array_equal(create_pipeline().run()[0].as_array(), [[42], [42]])


def test_a_fresh_import_holds_the_modules_the_page_reaches_as_attributes():
    # the page's first line after its import: `@dali.pickling.pickle_by_value` (no `import` of the module)
    code = ("import penstock as dali; dali.pickling.pickle_by_value; dali.pipeline.experimental.pipeline_def; "
            "dali.pipeline.do_not_convert; dali.types.DALIDataType.BOOL")
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def test_run_with_pipeline_inputs():
    @pipeline_def
    def my_pipe():
        inp = fn.external_source(name="my_inp")
        return inp

    p = my_pipe(prefetch_queue_depth=1, batch_size=2, num_threads=1, device_id=None)
    data = np.random.random((2, 3, 2))
    np.testing.assert_array_equal(p.run(my_inp=data)[0].as_array(), data)


def test_debug_mode_examples(image_dirs, capsys):
    images_dir = "image_dir"

    @dali.pipeline.experimental.pipeline_def(debug=True)
    def my_pipe():
        data, _ = fn.readers.file(file_root=images_dir)
        img = fn.decoders.image(data)
        print(np.array(img.get()[0]))
        return img

    (img,) = my_pipe(batch_size=2, num_threads=1, device_id=None).run()
    assert str(img.at(0).reshape(-1)[0]) in capsys.readouterr().out

    @dali.pipeline.experimental.pipeline_def(batch_size=8, debug=True)
    def my_pipe2():
        img = [np.random.rand(640, 480, 3) for _ in range(8)]
        output = fn.flip(img)
        return output, img

    out, img = my_pipe2(num_threads=1, device_id=None).run()
    np.testing.assert_array_equal(out.at(3), img.at(3)[:, ::-1])


def test_feed_input_prefetch_queue_depth_batches_ahead():
    # "To avoid stalls, feed the data prefetch_queue_depth times ahead": two batches fed before the first
    # run() of a pipeline of the default depth 2 make two runs; a third run() finds nothing fed for its
    # iteration, and fails only then (as DALI 2.4 does)
    @pipeline_def
    def my_pipe():
        inp = fn.external_source(name="my_inp")
        return inp

    p = my_pipe(batch_size=2, num_threads=1, device_id=None, output_dtype=DALIDataType.INT64, output_ndim=1)
    assert p.output_dtype() == [DALIDataType.INT64] and p.output_ndim() == [1]  # as declared, before a build
    batches = [np.arange(4, dtype=np.int64).reshape(2, 2) + 10 * k for k in range(2)]
    for batch in batches:
        p.feed_input("my_inp", batch)
    for batch in batches:
        np.testing.assert_array_equal(p.run()[0].as_array(), batch)
        assert p.input_feed_count("my_inp") == 2
    with pytest.raises(IndexError, match="Attempted to peek the data batch that doesn't exist"):
        p.run()
