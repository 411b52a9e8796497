"""Debug mode: pipeline.experimental.pipeline_def(debug=True) runs the graph function eagerly."""
import io
import os
import sys

import numpy as np
import pytest
from PIL import Image

from penstock import fn, pipeline_def, types
from penstock.pipeline import experimental
from penstock.tensors import TensorListCPU

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
from make_sample_data import photo_like  # noqa: E402

B = 4


def _debug(**kw):
    return experimental.pipeline_def(batch_size=B, num_threads=2, device_id=None, debug=True, **kw)


def _images(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 255, (5 + i, 6, 3), dtype=np.uint8) for i in range(B)]


def test_get_and_print_intermediate_nodes(capsys):
    seen = {}

    @_debug()
    def pipe():
        x = fn.external_source(source=lambda: [np.full((2,), i, np.int32) for i in range(B)], batch=True)
        y = x * 3
        seen["y"] = y.get()
        print(y)
        return y

    (out,) = pipe().run()
    assert isinstance(seen["y"], TensorListCPU)
    np.testing.assert_array_equal(seen["y"].as_array(), np.arange(B)[:, None].repeat(2, 1) * 3)
    np.testing.assert_array_equal(out.as_array(), seen["y"].as_array())
    printed = capsys.readouterr().out
    assert "[9 9]" in printed and "INT32" in printed


def test_data_inputs_of_every_kind():
    torch = pytest.importorskip("torch")
    imgs = _images()
    dense = np.stack([np.arange(12, dtype=np.float32).reshape(2, 2, 3) + i for i in range(B)])

    @_debug()
    def pipe():
        a = fn.flip(imgs, horizontal=1, vertical=0)                     # list of arrays
        b = fn.flip(TensorListCPU(imgs, "HWC"), horizontal=0, vertical=1)  # TensorList
        c = fn.flip(list(torch.from_numpy(dense)), horizontal=1, vertical=0)  # list of torch tensors
        # an array or a tensor holds its samples along its first axis (DALI splits it so)
        d = fn.flip(dense, horizontal=1, vertical=0)
        e = fn.flip(torch.from_numpy(dense), horizontal=0, vertical=1)
        f = fn.flip(dense[:2], horizontal=1, vertical=0)  # fewer samples than max_batch_size
        return a, b, c, d, e, f

    a, b, c, d, e, f = pipe().run()
    for i in range(B):
        np.testing.assert_array_equal(a.at(i), imgs[i][:, ::-1])
        np.testing.assert_array_equal(b.at(i), imgs[i][::-1])
    for out in (c, d):
        np.testing.assert_array_equal(out.as_array(), dense[:, :, ::-1])
    np.testing.assert_array_equal(e.as_array(), dense[:, ::-1])
    np.testing.assert_array_equal(f.as_array(), dense[:2, :, ::-1])


def test_an_array_of_more_samples_than_max_batch_size_is_refused():
    @_debug()
    def pipe():
        return fn.flip(np.zeros((B + 1, 2, 2, 3), np.uint8), horizontal=1)

    with pytest.raises(RuntimeError, match=f"a batch of {B + 1} samples was given, more than max_batch_size {B}"):
        pipe().run()


def test_python_control_flow_on_values_and_iterations():
    def source():
        source.calls += 1
        return [np.array(source.calls * 10 + i, np.int32) for i in range(B)]
    source.calls = 0

    @_debug()
    def pipe():
        x = fn.external_source(source=source, batch=True)
        if np.asarray(x.get().as_array()).sum() > 50:  # decided on this iteration's values
            return x + 1000
        return x - 1000

    p = pipe()
    np.testing.assert_array_equal(p.run()[0].as_array(), np.arange(10, 14) - 1000)
    np.testing.assert_array_equal(p.run()[0].as_array(), np.arange(20, 24) + 1000)


def test_external_source_with_several_outputs_holds_its_data():
    def source():
        return [np.array(i, np.int32) for i in range(B)], [np.array(-i, np.float32) for i in range(B)]

    @_debug()
    def pipe():
        a, b = fn.external_source(source=source, num_outputs=2, batch=True)
        np.testing.assert_array_equal(a.get().as_array(), np.arange(B))
        return a, b * 2

    a, b = pipe().run()
    np.testing.assert_array_equal(a.as_array(), np.arange(B))
    np.testing.assert_array_equal(b.as_array(), -2.0 * np.arange(B))


def test_unknown_argument_is_named():
    @_debug()
    def pipe():
        return fn.flip(_images(), horizontall=1)

    with pytest.raises(Exception, match="horizontall"):
        pipe().run()


def _graph(op_seed):
    imgs = _images(1)
    x = fn.external_source(source=lambda: imgs, batch=True, layout="HWC")
    angle = fn.random.uniform(range=(-30, 30), seed=op_seed)
    flip = fn.random.coin_flip(seed=op_seed + 1)
    return fn.rotate(fn.flip(x, horizontal=flip), angle=angle, fill_value=0), angle, flip


def test_same_results_as_standard_mode_with_seeds():
    debug = _debug()(_graph)(11)
    standard = pipeline_def(batch_size=B, num_threads=2, device_id=None)(_graph)(11)
    for _ in range(2):
        for d, s in zip(debug.run(), standard.run()):
            for i in range(B):
                np.testing.assert_array_equal(d.at(i), s.at(i))


def test_conditionals_in_debug_mode():
    @_debug(enable_conditionals=True)
    def pipe():
        x = fn.external_source(source=lambda: [np.array(i, np.int32) for i in range(B)], batch=True)
        if x > 1:
            y = x * 10
        else:
            y = x - 100
        return y

    np.testing.assert_array_equal(pipe().run()[0].as_array(), [-100, -99, 20, 30])


def test_operators_must_not_change_between_iterations():
    calls = []

    @_debug()
    def pipe():
        calls.append(1)
        x = fn.external_source(source=lambda: [np.array(1, np.int32)] * B, batch=True)
        return x + 1 if len(calls) == 1 else fn.cast(x, dtype=types.FLOAT)

    p = pipe()
    p.run()
    with pytest.raises(RuntimeError, match="Unexpected operator 'cast'. Debug mode does not support changing the "
                                           "order of operators executed within the pipeline"):
        p.run()


def test_random_operators_draw_as_in_standard_mode():
    # the same seeds as a standard pipeline (handed out in call order), so debug mode reproduces it
    def graph():
        return fn.random.coin_flip(), fn.random.normal(shape=[2]), fn.random.uniform(range=[0, 1])

    standard = pipeline_def(batch_size=B, num_threads=1, device_id=None, seed=47)(graph)()
    debug = _debug(seed=47)(graph)()
    for _ in range(2):
        for s, d in zip(standard.run(), debug.run()):
            np.testing.assert_array_equal(s.as_array(), d.as_array())


def test_feed_input_in_debug_mode_feeds_the_named_external_source():
    p = _debug()(lambda: fn.external_source(name="x"))()
    fed = [np.full((B, 2), k, np.float32) for k in range(3)]
    for batch in fed:  # before the graph function ran once: kept until the source exists
        p.feed_input("x", batch)
    for batch in fed:
        np.testing.assert_array_equal(p.run()[0].as_array(), batch)


@pytest.mark.parametrize("change, words", [
    ("inputs", "Trying to use operator 'cat' with different number of inputs than when it was built. Expected: 1"),
    ("kwargs", "Trying to use operator 'cat' with different number of keyword arguments than when it was built"),
    ("batch", "Input 1 for operator 'cat' is a constant but was a batch when created"),
])
def test_operator_calls_must_keep_their_inputs_and_arguments(change, words):
    calls = []

    @_debug()
    def pipe():
        calls.append(1)
        first = len(calls) == 1
        batch = [np.zeros(1, np.float32)] * B
        if change == "inputs":
            return fn.cat(*([batch] if first else [batch, batch]))
        if change == "kwargs":
            return fn.cat(batch, batch, **({"axis": 0} if first else {}))
        return fn.cat(batch, batch if first else np.float32(0))  # a 0-d array: a constant

    p = pipe()
    p.run()
    with pytest.raises(RuntimeError, match=words):
        p.run()


def _large_jpegs():
    """Photographs large enough that a resize to 64 pixels lets the decoder shrink them in the DCT domain."""
    rng = np.random.default_rng(1)
    out = []
    for k in range(B):
        buf = io.BytesIO()
        Image.fromarray(photo_like(rng, 1200 + 31 * k, 1600 - 17 * k)).save(buf, format="JPEG", quality=90)
        out.append(np.frombuffer(buf.getvalue(), np.uint8))
    return out


@pytest.mark.parametrize("graph", [
    lambda d: fn.resize(fn.decoders.image(d), resize_shorter=64),
    lambda d: fn.resize(fn.decoders.image_random_crop(d), size=[64, 64]),
    lambda d: fn.crop_mirror_normalize(fn.resize(fn.decoders.image(d, output_type=types.GRAY), resize_shorter=60),
                                       crop=(48, 48)),
], ids=["decode_resize", "random_crop_resize", "gray_resize_cmn"])
def test_a_decoded_image_only_a_resize_reads_equals_standard_mode(graph):
    # standard mode decodes it smaller in the DCT domain for the resize (a few levels off a full decode
    # then resize): debug mode puts the decoding off until it is read, and does the same
    jpegs = _large_jpegs()

    def pipe():
        return graph(fn.external_source(lambda: jpegs))

    standard = pipeline_def(batch_size=B, num_threads=1, device_id=None, seed=3)(pipe)()
    debug = _debug(seed=3)(pipe)()
    for _ in range(2):
        for s, d in zip(standard.run(), debug.run()):
            for i in range(B):
                np.testing.assert_array_equal(np.array(s[i]), np.array(d[i]))


def test_a_decoded_image_read_twice_is_decoded_whole():
    jpegs = _large_jpegs()
    seen = []

    @_debug(seed=3)
    def pipe():
        img = fn.decoders.image(fn.external_source(lambda: jpegs))
        small = fn.resize(img, resize_shorter=64)
        seen.append(img.get().at(0).shape)  # read by the user too: the whole image
        return small, img

    @pipeline_def(batch_size=B, num_threads=1, device_id=None, seed=3)
    def standard():
        img = fn.decoders.image(fn.external_source(lambda: jpegs))
        return fn.resize(img, resize_shorter=64), img

    p, ref = pipe(), standard()
    p.run()
    ref.run()
    assert seen[0] == (1200, 1600, 3)
    for s, d in zip(ref.run(), p.run()):  # from the second iteration on, as standard mode (no fusion)
        for i in range(B):
            np.testing.assert_array_equal(np.array(s[i]), np.array(d[i]))
