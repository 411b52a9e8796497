"""The TorchVision-style API against torchvision.transforms.v2 (where torchvision is installed):
deterministic transforms give torchvision's values (exactly, or within the documented tolerance of
resampling filters), random ones torchvision's kinds of result; the same transforms run alike in
the dynamic mode, as a Compose pipeline and inside a user's pipeline."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
from PIL import Image  # noqa: E402

import penstock.experimental.dynamic as ndd  # noqa: E402
import penstock.experimental.torchvision as T  # noqa: E402
import penstock.experimental.torchvision.v2.functional as F  # noqa: E402
from _torchvision_reference import import_torchvision  # noqa: E402
from make_sample_data import photo_like  # noqa: E402
from penstock import fn, pipeline_def  # noqa: E402

torchvision = import_torchvision()
needs_torchvision = pytest.mark.skipif(torchvision is None, reason="torchvision is not installed")


def _photo(h=97, w=131, seed=0):
    return photo_like(np.random.default_rng(seed), h, w)


def _tensor(arr):
    return torch.from_numpy(np.ascontiguousarray(arr)).permute(2, 0, 1).contiguous()


def _inputs():
    """A PIL image, a CHW tensor and an NCHW batch of photo-like pictures."""
    arr = _photo()
    batch = torch.stack([_tensor(_photo(seed=s)) for s in range(3)])
    return Image.fromarray(arr), _tensor(arr), batch


def _diff(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape
    d = np.abs(a - b)
    return d.max(), d.mean()


def _v2():
    from torchvision.transforms import v2
    return v2


EXACT = [  # (name, transform, largest difference allowed: 1 where float sums round apart)
    ("CenterCrop(51)", lambda m: m.CenterCrop(51), 0),
    ("CenterCrop larger", lambda m: m.CenterCrop((120, 150)), 0),
    ("CenterCrop odd", lambda m: m.CenterCrop((40, 63)), 0),
    ("Pad", lambda m: m.Pad((1, 2, 3, 4), fill=7), 0),
    ("Pad 2", lambda m: m.Pad([5, 1]), 0),
    ("RandomHorizontalFlip(1)", lambda m: m.RandomHorizontalFlip(1.0), 0),
    ("RandomVerticalFlip(1)", lambda m: m.RandomVerticalFlip(1.0), 0),
    ("RandomHorizontalFlip(0)", lambda m: m.RandomHorizontalFlip(0.0), 0),
    ("Grayscale", lambda m: m.Grayscale(), 0),
    ("Grayscale(3)", lambda m: m.Grayscale(3), 0),
    ("RandomGrayscale(1)", lambda m: m.RandomGrayscale(1.0), 0),
    ("GaussianBlur", lambda m: m.GaussianBlur(5, 1.3), 1),
    ("GaussianBlur rectangular", lambda m: m.GaussianBlur((3, 7), 2.0), 1),
    ("Resize NEAREST_EXACT", lambda m: m.Resize((48, 64), interpolation=m.InterpolationMode.NEAREST_EXACT), 0),
    ("PILToTensor", lambda m: m.PILToTensor(), 0),
    ("ToTensor", lambda m: m.ToTensor(), 0),
]


@needs_torchvision
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name, make, tolerance", EXACT, ids=[e[0] for e in EXACT])
def test_deterministic_transforms_give_torchvision_s_values(name, make, tolerance):
    img, t, batch = _inputs()
    for x in ((img,) if name in ("PILToTensor", "ToTensor") else (img, t, batch)):
        ours, theirs = make(T)(x), make(_v2())(x)
        assert type(ours) is type(theirs)
        if isinstance(theirs, torch.Tensor):
            assert ours.dtype == theirs.dtype
        assert _diff(ours, theirs)[0] <= tolerance


RESAMPLING = [  # (transform arguments, max level difference, mean difference): the filters differ most
    ({"size": (48, 64)}, 12, 0.2),            # where a downscale's antialiasing widens them
    ({"size": (200, 300)}, 1, 0.2),
    ({"size": 50}, 12, 0.2),
    ({"size": 50, "max_size": 60}, 12, 0.2),
    ({"size": (48, 64), "interpolation": "bicubic"}, 6, 0.2),
    ({"size": (48, 64), "antialias": False}, 12, 0.2),  # PIL images are antialiased all the same
]


@needs_torchvision
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("kwargs, worst, mean", RESAMPLING, ids=[str(r[0]) for r in RESAMPLING])
def test_resize_gives_torchvision_s_sizes_and_values_within_the_filters_tolerance(kwargs, worst, mean):
    v2 = _v2()
    theirs_kwargs = dict(kwargs)
    if "interpolation" in kwargs:
        theirs_kwargs["interpolation"] = v2.InterpolationMode(kwargs["interpolation"])
    for x in _inputs():
        ours, theirs = T.Resize(**kwargs)(x), v2.Resize(**theirs_kwargs)(x)
        d_max, d_mean = _diff(ours, theirs)
        assert d_max <= worst and d_mean <= mean


@needs_torchvision
def test_resize_sizes_for_every_aspect_and_limit():
    v2 = _v2()
    for h, w in [(97, 131), (131, 97), (64, 64), (10, 300), (300, 20)]:
        x = torch.zeros(3, h, w, dtype=torch.uint8)
        for size, max_size in [(50, None), (32, 40), (7, None), (None, 45), (None, 600)]:
            assert T.Resize(size, max_size=max_size)(x).shape == v2.Resize(size, max_size=max_size)(x).shape


@needs_torchvision
def test_functional_color_adjustments_and_conversions():
    v2 = _v2()
    _, t, batch = _inputs()
    f = t.float() / 255
    for ours, theirs, tol in [
            (F.adjust_brightness(t, 1.3), v2.functional.adjust_brightness(t, 1.3), 0),
            (F.adjust_contrast(batch, 0.6), v2.functional.adjust_contrast(batch, 0.6), 0),
            (F.adjust_saturation(t, 1.7), v2.functional.adjust_saturation(t, 1.7), 1),
            (F.adjust_brightness(f, 0.7), v2.functional.adjust_brightness(f, 0.7), 1e-6),
            (F.normalize(f, [0.4, 0.5, 0.6], [0.2, 0.3, 0.25]),
             v2.functional.normalize(f, [0.4, 0.5, 0.6], [0.2, 0.3, 0.25]), 1e-6),
            (F.to_dtype(t, torch.float32, scale=True), v2.functional.to_dtype(t, torch.float32, scale=True), 1e-7),
            (F.to_dtype(f * 0.7, torch.uint8, scale=True), v2.functional.to_dtype(f * 0.7, torch.uint8, scale=True), 0),
            (F.to_dtype(f * 300 - 20, torch.int16), v2.functional.to_dtype(f * 300 - 20, torch.int16), 0),
            (F.crop(t, 5, 7, 30, 40), v2.functional.crop(t, 5, 7, 30, 40), 0),
            (F.resized_crop(t, 5, 7, 30, 40, [20, 20]), v2.functional.resized_crop(t, 5, 7, 30, 40, [20, 20]), 8),
            (F.horizontal_flip(batch), v2.functional.horizontal_flip(batch), 0),
            (F.rgb_to_grayscale(t, 3), v2.functional.rgb_to_grayscale(t, 3), 0),
            (F.pad(t, [2, 3]), v2.functional.pad(t, [2, 3]), 0),
            (F.gaussian_blur(t, [5, 5]), v2.functional.gaussian_blur(t, [5, 5]), 0)]:
        assert ours.dtype == theirs.dtype and _diff(ours, theirs)[0] <= tol
    img = Image.fromarray(_photo())
    for ours, theirs in [(F.to_pil_image(t), v2.functional.to_pil_image(t)),
                         (F.to_pil_image(f), v2.functional.to_pil_image(f)),
                         (F.rgb_to_grayscale(img), v2.functional.rgb_to_grayscale(img))]:
        assert ours.mode == theirs.mode and _diff(ours, theirs)[0] == 0
    assert F.get_dimensions(img) == v2.functional.get_dimensions(img) == F.get_dimensions(t)
    assert F.get_size(batch) == v2.functional.get_size(batch)


@needs_torchvision
def test_random_transforms_give_torchvision_s_kinds_of_result():
    v2 = _v2()
    img, t, batch = _inputs()
    for make in (lambda m: m.RandomResizedCrop(32), lambda m: m.RandomCrop(40, padding=3),
                 lambda m: m.RandomCrop(150, pad_if_needed=True, fill=9), lambda m: m.ColorJitter(0.4, 0.4, 0.4, 0.1),
                 lambda m: m.RandomGrayscale(0.5), lambda m: m.GaussianBlur(3), lambda m: m.RandomHorizontalFlip()):
        for x in (img, t, batch):
            ours, theirs = make(T)(x), make(v2)(x)
            assert type(ours) is type(theirs)
            assert np.asarray(ours).shape == np.asarray(theirs).shape
            if isinstance(theirs, torch.Tensor):
                assert ours.dtype == theirs.dtype


def test_random_crop_takes_a_window_of_the_padded_image():
    t = torch.arange(3 * 10 * 12, dtype=torch.int16).reshape(3, 10, 12)
    padded = torch.nn.functional.pad(t, (2, 2, 2, 2))
    for _ in range(10):
        out = T.RandomCrop((6, 7), padding=2)(t)
        found = [(i, j) for i in range(padded.shape[1] - 5) for j in range(padded.shape[2] - 6)
                 if torch.equal(padded[:, i:i + 6, j:j + 7], out)]
        assert found


def test_random_resized_crop_of_the_whole_image_is_a_resize():
    t = _inputs()[1]
    h, w = t.shape[1:]
    full = T.RandomResizedCrop((40, 50), scale=(1.0, 1.0), ratio=(w / h, w / h))(t)
    assert torch.equal(full, T.Resize((40, 50))(t))


def test_random_choices_are_drawn_per_image():
    batch = torch.stack([_tensor(_photo(seed=0))] * 64)
    flipped = T.RandomHorizontalFlip(0.5)(batch)
    same = [torch.equal(flipped[i], batch[i]) for i in range(64)]
    assert 10 < sum(same) < 54
    ndd.random.set_seed(3)
    a = T.RandomResizedCrop(16)(batch)
    ndd.random.set_seed(3)
    assert torch.equal(a, T.RandomResizedCrop(16)(batch))  # reproducible under the dynamic mode's seed


def test_compose_runs_a_pipeline_with_the_dynamic_mode_s_values():
    img, t, batch = _inputs()
    chain = [T.Resize(60), T.CenterCrop(48), T.Pad(2), T.Grayscale(3), T.RandomHorizontalFlip(1.0)]
    composed = T.Compose(chain + [T.PILToTensor()])
    direct = img
    for tr in chain:
        direct = tr(direct)
    assert torch.equal(composed(img), T.PILToTensor()(direct))
    tensor_chain = T.Compose(chain + [T.ToDtype(torch.float32, scale=True), T.Normalize([0.5] * 3, [0.25] * 3)])
    for x in (t, batch):
        expected = x
        for tr in chain:
            expected = tr(expected)
        expected = T.Normalize([0.5] * 3, [0.25] * 3)(T.ToDtype(torch.float32, scale=True)(expected))
        assert torch.allclose(tensor_chain(x), expected)
    assert T.Compose([T.ToPILImage()])(t).size == (t.shape[2], t.shape[1])
    with pytest.raises(ValueError, match="batch_size"):
        T.Compose([T.Resize(10)], batch_size=2)(batch)


def test_compose_random_apply_branches_per_image():
    batch = torch.stack([_tensor(_photo(seed=0))] * 32)
    out = T.Compose([T.RandomApply([T.RandomVerticalFlip(1.0), T.Grayscale(3)], p=0.5)], batch_size=32)(batch)
    changed = sum(not torch.equal(out[i], batch[i]) for i in range(32))
    assert 4 < changed < 28
    direct = T.RandomApply([T.RandomVerticalFlip(1.0)], p=0.5)(batch)
    assert 4 < sum(not torch.equal(direct[i], batch[i]) for i in range(32)) < 28


def test_transforms_in_a_user_pipeline_and_on_dynamic_mode_data():
    images = [_photo(seed=s) for s in range(2)]
    transforms = T.Compose([T.Resize((30, 40)), T.CenterCrop(24), T.ColorJitter(brightness=(1.2, 1.2))])

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        return transforms(fn.external_source(source=lambda: images, layout="HWC"))

    in_pipeline = pipe().run()[0]
    dynamic = transforms(ndd.batch(images, layout="HWC"))
    for i in range(2):
        np.testing.assert_array_equal(in_pipeline.at(i), np.asarray(dynamic.tensors[i]))

    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def branching():
        return T.RandomApply([T.RandomVerticalFlip(1.0)])(fn.external_source(source=lambda: images, layout="HWC"))

    with pytest.raises(RuntimeError, match="enable_conditionals"):
        branching().build()


def test_what_penstock_does_not_offer_says_so():
    t = _inputs()[1]
    with pytest.raises(NotImplementedError, match="BOX"):
        T.Resize(10, interpolation=T.InterpolationMode.BOX)
    with pytest.raises(NotImplementedError, match="reflect"):
        T.Pad(2, padding_mode="reflect")
    with pytest.raises(NotImplementedError, match="inplace"):
        T.Normalize([0.5], [0.5], inplace=True)
    with pytest.raises(TypeError, match="float"):
        T.Normalize([0.5] * 3, [0.5] * 3)(t)
    with pytest.raises(ValueError):
        T.RandomCrop(500)(t)
    with pytest.raises(TypeError):
        T.Resize(10)(np.zeros((4, 4, 3), np.uint8))
