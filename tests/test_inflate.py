"""decoders.inflate: LZ4 blocks (compressed here by the lz4 library) inflated into tensors of the given
shape and type, whole samples and samples of chunks (offsets, sizes, or both), per-sample shapes,
layouts, corrupt and mis-sized chunks; the deprecated experimental.inflate. DALI 2.4 has the operator
on the GPU only (no CPU oracle): test_inflate's GPU tests compare the GPU with the CPU."""
import numpy as np
import pytest

from penstock import fn, pipeline_def, types

from _util import run_es, samples

lz4_block = pytest.importorskip("lz4.block")


def compress(a: np.ndarray) -> np.ndarray:
    return np.frombuffer(lz4_block.compress(np.ascontiguousarray(a).tobytes(), store_size=False), np.uint8)


RNG = np.random.default_rng(3)
# compressible data: runs and repeats (matches, overlapping ones too) among noise
IMAGES = [np.repeat(RNG.integers(0, 255, (12, 5, 3), np.uint8), 4, axis=1),
          np.tile(np.arange(60, dtype=np.uint8), 12).reshape(12, 20, 3)]
FLOATS = [np.linspace(-5, 5, 48, dtype=np.float32).reshape(6, 8), np.zeros((6, 8), np.float32)]


def test_whole_samples_inflate_to_their_shape_and_type():
    out, = run_es(lambda x: fn.decoders.inflate(x, shape=[12, 20, 3], layout="HWC"), [compress(a) for a in IMAGES])
    assert out.layout() == "HWC" and out.dtype == types.UINT8
    for got, want in zip(samples(out), IMAGES):
        np.testing.assert_array_equal(got, want)
    out, = run_es(lambda x: fn.decoders.inflate(x, shape=[6, 8], dtype=types.FLOAT), [compress(a) for a in FLOATS])
    for got, want in zip(samples(out), FLOATS):
        assert got.dtype == np.float32 and np.array_equal(got, want)


def _chunked(frames: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    parts = [compress(f) for f in frames]
    sizes = np.array([len(p) for p in parts], np.int32)
    return np.concatenate(parts), sizes, np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int32)


@pytest.mark.parametrize("given", ["sizes", "offsets", "both"])
def test_samples_of_chunks_become_sequences(given):
    videos = [[IMAGES[0][k::3][:4] for k in range(3)], [IMAGES[1][:4], IMAGES[1][4:8]]]
    data, sizes, offsets = zip(*[_chunked(v) for v in videos])
    args = {"sizes": [sizes], "offsets": [offsets], "both": [sizes, offsets]}[given]

    def graph(x, *chunks):
        kw = dict(zip({"sizes": ["chunk_sizes"], "offsets": ["chunk_offsets"],
                       "both": ["chunk_sizes", "chunk_offsets"]}[given], chunks))
        return fn.decoders.inflate(x, shape=[4, 20, 3], layout="HWC", sequence_axis_name="F", **kw)

    out, = run_es(graph, list(data), *[list(a) for a in args])
    assert out.layout() == "FHWC"
    for got, frames in zip(samples(out), videos):
        np.testing.assert_array_equal(got, np.stack(frames))


def test_per_sample_shapes_and_no_layout():
    data = [compress(IMAGES[0][:2]), compress(IMAGES[1][:5])]
    shapes = [np.array([2, 60], np.int32), np.array([25, 12], np.int32)]
    out, = run_es(lambda x, s: fn.decoders.inflate(x, shape=s), data, shapes)
    assert out.layout() == ""
    np.testing.assert_array_equal(samples(out)[0], IMAGES[0][:2].reshape(2, 60))
    np.testing.assert_array_equal(samples(out)[1], IMAGES[1][:5].reshape(25, 12))


@pytest.mark.parametrize("data, kwargs, words", [
    ([compress(IMAGES[0])], dict(shape=[12, 20, 2]), "decompresses to more bytes than the output holds"),
    ([compress(IMAGES[0])], dict(shape=[12, 20, 4]), "decompresses to 720 bytes; its shape and dtype need 960"),
    ([compress(IMAGES[0])[:-3]], dict(shape=[12, 20, 3]), "LZ4 chunk of"),
    ([np.array([0xF0, 5, 1, 2], np.uint8)], dict(shape=[8]), "literals run past the end"),
    ([np.array([0x00, 9, 0, 0x10, 7], np.uint8)], dict(shape=[8]), "before the start of the output"),
])
def test_bad_chunks_raise_naming_the_sample_and_chunk(data, kwargs, words):
    with pytest.raises(RuntimeError, match=f"(?s)sample 0.*chunk 0: .*{words}"):
        run_es(lambda x: fn.decoders.inflate(x, **kwargs), data)


def test_argument_errors():
    data = [compress(IMAGES[0])]
    for kwargs, error, words in (
            (dict(shape=[720], algorithm="snappy"), ValueError, "Unknown inflate algorithm"),
            (dict(shape=[720], chunk_sizes=[10, 10000]), ValueError, "a chunk lies outside"),
            (dict(shape=[720], chunk_sizes=[10], chunk_offsets=[0, 5]), ValueError, "1 chunk_sizes"),
            (dict(shape=[720], layout="HW"), ValueError, "does not describe 1-D chunks")):
        with pytest.raises(error, match=words):
            run_es(lambda x: fn.decoders.inflate(x, **kwargs), data)
    with pytest.raises(RuntimeError, match="1-D uint8"):
        run_es(lambda x: fn.decoders.inflate(x, shape=[2]), [np.zeros(3, np.int32)])


def test_experimental_inflate_is_a_deprecated_alias():
    with pytest.warns(DeprecationWarning, match="`penstock.fn.experimental.inflate` is now deprecated. Use "
                                                "`penstock.fn.decoders.inflate` instead"):
        out, = run_es(lambda x: fn.experimental.inflate(x, shape=[12, 20, 3]), [compress(IMAGES[1])])
    np.testing.assert_array_equal(samples(out)[0], IMAGES[1])


# ---- the GPU (nvCOMP) against the CPU --------------------------------------------------------

def _gpu_ready() -> bool:
    from penstock import _cuda
    from penstock._cuda import _nvcomp
    return _cuda.available() and _nvcomp.library_path() is not None


def _run_both(graph, *inputs):
    outs = []
    for device_id in (None, 0):
        @pipeline_def(batch_size=len(inputs[0]), num_threads=2, device_id=device_id)
        def pipe():
            nodes = [fn.external_source(source=lambda d=d: d) for d in inputs]
            if device_id is not None:
                nodes[0] = nodes[0].gpu()
            return graph(*nodes)

        out = pipe().run()[0]
        outs.append(out.as_cpu() if device_id is not None else out)
    return outs


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_ready(), reason="needs a CUDA device and nvCOMP (nvidia-libnvcomp-cu13)")
def test_gpu_inflates_as_the_cpu_does():
    videos = [[IMAGES[0][k::3][:4] for k in range(3)], [IMAGES[1][:4], IMAGES[1][4:8]]]
    data, sizes, _ = zip(*[_chunked(v) for v in videos])
    cpu, gpu = _run_both(lambda x, s: fn.decoders.inflate(x, shape=[4, 20, 3], chunk_sizes=s, layout="HWC"),
                         list(data), list(sizes))
    assert gpu.layout() == cpu.layout() == "FHWC"
    for a, b in zip(samples(cpu), samples(gpu)):
        np.testing.assert_array_equal(a, b)
    cpu, gpu = _run_both(lambda x: fn.decoders.inflate(x, shape=[6, 8], dtype=types.FLOAT, check_output_size=True),
                         [compress(a) for a in FLOATS])
    for a, b in zip(samples(cpu), samples(gpu)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_ready(), reason="needs a CUDA device and nvCOMP (nvidia-libnvcomp-cu13)")
@pytest.mark.parametrize("check_output_size", [False, True])
def test_gpu_refuses_corrupt_and_mis_sized_chunks(check_output_size):
    for data, shape in (([compress(IMAGES[0])], [12, 20, 4]), ([np.array([0x1F, 1, 2, 3], np.uint8)], [8])):
        with pytest.raises(RuntimeError, match="(?s)sample 0.*chunk 0: LZ4 chunk"):
            _run_both(lambda x: fn.decoders.inflate(x, shape=shape, check_output_size=check_output_size), data)


def test_the_nvcomp_binding_loads_where_the_library_is():
    from penstock._cuda import _nvcomp
    if _nvcomp.library_path() is None:
        pytest.skip("nvCOMP (nvidia-libnvcomp-cu12/13) is not installed")
    lib = _nvcomp._library()  # version checked; the entry points declared
    temp = _nvcomp.ctypes.c_size_t(1)
    assert lib.nvcompBatchedLZ4DecompressGetTempSizeAsync(4, 1 << 16, _nvcomp._DecompressOpts(),
                                                          _nvcomp.ctypes.byref(temp), 4 << 16) == 0
