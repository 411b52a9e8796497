"""A GPU resize whose only reader is a GPU crop_mirror_normalize runs as one operator
(operators/_resize_normalize.py): its batches must be the two operators' exactly, whether the fused
pass covers the batch or it falls back to running them one after the other. On a machine without a
GPU the pipelines run against HostDevice (tests/_cuda_on_host.py: csrc/cuda compiled for the host);
the tests marked gpu run the real kernels, float16 outputs included."""
import numpy as np
import pytest

from penstock import _cuda, fn, pipeline_def, types
from penstock.operators._resize_normalize import ResizeNormalize
from penstock.pipeline import _build

from _cuda_on_host import HostDevice, compile_for_host, use_host_device
from test_crop_mirror_normalize_emulated import CMN_HARNESS, _runner
from test_resize_emulated import HARNESS as RESIZE_HARNESS

MEAN, STD = [0.485 * 255, 0.456 * 255, 0.406 * 255], [0.229 * 255, 0.224 * 255, 0.225 * 255]
rng = np.random.default_rng(41)


def _smooth(h, w):
    """A photo-like image: smooth gradients and a few edges, not noise."""
    y, x = np.mgrid[0:h, 0:w]
    channels = [(x * (1 + c) + y * (3 - c)) % 256 for c in range(3)]
    return np.stack(channels, axis=-1).astype(np.uint8)


IMAGES = [_smooth(h, w) for h, w in [(61, 47), (30, 90), (120, 77), (45, 45), (200, 133)]]
MIRROR = [np.array(m, np.int32) for m in [0, 1, 1, 0, 1]]


def _pipeline(device_id, resize, normalize, outputs=("normalized",), memory_stats=False):
    # run in the calling thread: host-compiled kernels of two pipelines must not run at once (the
    # harnesses' thread indices are globals)
    @pipeline_def(batch_size=len(IMAGES), num_threads=1, device_id=device_id, seed=5, exec_async=False,
                  exec_pipelined=False, enable_memory_stats=memory_stats)
    def pipe():
        images = fn.external_source(source=lambda: IMAGES, batch=True, layout="HWC")
        mirror = fn.external_source(source=lambda: MIRROR, batch=True)
        resized = fn.resize(images.gpu(), name="resize", **resize)
        normalized = fn.crop_mirror_normalize(resized, mirror=mirror, name="normalize", **normalize)
        return tuple({"normalized": normalized, "resized": resized}[o] for o in outputs)
    p = pipe()
    p.build()
    return p


def _samples(batch):
    buf = np.asarray(batch._buf if not hasattr(batch._buf, "get") else batch._buf.get())
    return [buf[o:o + int(np.prod(s))].reshape(s) for o, s in zip(batch._offsets, batch._shapes)]


def _fused(pipe) -> bool:
    return any(isinstance(op, ResizeNormalize) for stage in pipe._executor.stages for op in stage)


CASES = {
    "train": ({"resize_x": 24, "resize_y": 20},
              {"dtype": types.FLOAT, "output_layout": "CHW", "mean": MEAN, "std": STD}),
    "val": ({"resize_shorter": 40}, {"dtype": types.FLOAT, "output_layout": "CHW", "crop": (32, 30),
                                     "mean": MEAN, "std": STD, "crop_pos_x": 0.25}),
    "hwc_uint8_scaled": ({"resize_x": 17, "resize_y": 33}, {"dtype": types.UINT8, "output_layout": "HWC",
                                                             "mean": [10.0], "std": [2.0], "scale": 0.5,
                                                             "shift": 3.0}),
    "padded_int8": ({"size": (26, 31)}, {"dtype": types.INT8, "output_layout": "CHW", "pad_output": True,
                                         "mean": [128.0], "std": [1.5], "fill_values": [0, 0, 0, 7]}),
    "hcw": ({"resize_x": 19, "resize_y": 23}, {"dtype": types.FLOAT, "output_layout": "HCW", "crop": (20, 15)}),
    # falls back: windows reaching outside the resized images, and a layout needing a transposition
    "padded_windows": ({"resize_x": 20, "resize_y": 20}, {"dtype": types.FLOAT, "crop": (24, 22),
                                                           "out_of_bounds_policy": "pad", "fill_values": [5.0]}),
    "transposed": ({"resize_x": 21, "resize_y": 18}, {"dtype": types.FLOAT, "output_layout": "WHC"}),
}


# the unfused crop_mirror_normalize's other output types
CMN_OUT_HARNESS = CMN_HARNESS + "".join(_runner(
    f"cmn_u8_{out}", f"const u8* src, {out}* dst, const i64* desc, const i64* bs, int n, int nd, int C, int cout, "
                     "int cdim, const float* mean, const float* inv_std, float shift, const float* fill",
    "src, dst, desc, bs, n, nd, C, cout, cdim, mean, inv_std, shift, fill") for out in ("u8", "i8"))
ON_THE_HOST = sorted(set(CASES) - {"transposed"})  # (the transposition's kernel is not compiled for the host)


@pytest.fixture(scope="module")
def host_kernels(tmp_path_factory):
    return {module: compile_for_host(tmp_path_factory.mktemp(module), f"{module}.cu", harness, with_common=True)
            for module, harness in (("resize", RESIZE_HARNESS), ("crop_mirror_normalize", CMN_OUT_HARNESS))}


def _unfused(monkeypatch):
    monkeypatch.setattr(_build, "fuse", lambda stages, output_refs: [list(s) for s in stages])


def _runs(make, monkeypatch, batches=2):
    fused = make()
    with monkeypatch.context() as m:
        _unfused(m)
        unfused = make()
    assert _fused(fused) and not _fused(unfused)
    for _ in range(batches):
        (got,), (want,) = fused.run(), unfused.run()
        assert got.layout() == want.layout() and got._shapes.tolist() == want._shapes.tolist()
        assert got.dtype == want.dtype
        for g, w in zip(_samples(got), _samples(want)):
            np.testing.assert_array_equal(g, w)
    return [s.copy() for s in _samples(got)]


@pytest.mark.parametrize("case", ON_THE_HOST)
def test_the_fused_operator_gives_the_two_operators_batches(monkeypatch, host_kernels, case):
    use_host_device(monkeypatch, HostDevice(host_kernels))
    resize, normalize = CASES[case]
    samples = _runs(lambda: _pipeline(0, resize, normalize), monkeypatch)
    assert len({float(np.abs(s.astype(float)).sum()) for s in samples}) == len(IMAGES)  # real, different data


def test_the_fused_pass_matches_the_cpu_operators(monkeypatch, host_kernels):
    use_host_device(monkeypatch, HostDevice(host_kernels))
    resize, normalize = CASES["val"]
    (gpu,), (cpu,) = _pipeline(0, resize, normalize).run(), _pipeline(None, resize, normalize).run()
    for g, c in zip(_samples(gpu), _samples(cpu)):
        np.testing.assert_allclose(g, c, atol=1.01 / min(STD))  # the resize kernels agree within 1 (uint8)


def test_a_resize_read_elsewhere_is_not_fused(monkeypatch, host_kernels):
    use_host_device(monkeypatch, HostDevice(host_kernels))
    resize, normalize = CASES["train"]
    pipe = _pipeline(0, resize, normalize, outputs=("normalized", "resized"))
    assert not _fused(pipe)
    normalized, resized = pipe.run()
    assert resized._shapes.tolist() == [[20, 24, 3]] * len(IMAGES)
    assert normalized._shapes.tolist() == [[3, 20, 24]] * len(IMAGES)


def test_per_operator_memory_statistics_keep_the_operators_apart(monkeypatch, host_kernels):
    use_host_device(monkeypatch, HostDevice(host_kernels))
    resize, normalize = CASES["train"]
    pipe = _pipeline(0, resize, normalize, memory_stats=True)
    assert not _fused(pipe)
    pipe.run()
    stats = pipe.executor_statistics()
    assert stats["resize"]["runs"] == stats["normalize"]["runs"] == 1
    assert stats["resize"]["max_real_memory_size"] == [len(IMAGES) * 20 * 24 * 3]  # the resized batch, uint8


def test_the_profile_names_both_operators(monkeypatch, host_kernels):
    from penstock import profiler
    use_host_device(monkeypatch, HostDevice(host_kernels))
    resize, normalize = CASES["train"]
    result = profiler.profile(lambda: _pipeline(0, resize, normalize), batches=2, warmup=1)
    fused = [op for op in result.operators if op.device == "gpu"]
    assert [(op.name, op.function, op.runs) for op in fused] == [("normalize", "resize + crop_mirror_normalize", 2)]


def test_a_failure_names_the_operator_that_failed(monkeypatch, host_kernels):
    use_host_device(monkeypatch, HostDevice(host_kernels))
    pipe = _pipeline(0, {"resize_x": 20, "resize_y": 20}, {"crop": (24, 22)})  # windows outside, policy 'error'
    assert _fused(pipe)
    with pytest.raises(RuntimeError, match=r"crop_mirror_normalize"):
        pipe.run()


# ---- the real kernels ----------------------------------------------------------------------------

@pytest.mark.parametrize("case", sorted(CASES) + ["float16"])
@pytest.mark.gpu
@pytest.mark.skipif(not _cuda.available(), reason="needs a CUDA device")
def test_on_the_gpu_the_fused_operator_gives_the_two_operators_batches(monkeypatch, case):
    resize, normalize = CASES["train"] if case == "float16" else CASES[case]
    if case == "float16":
        normalize = {**normalize, "dtype": types.FLOAT16}
    _runs(lambda: _pipeline(0, resize, normalize), monkeypatch, batches=3)
