"""Automatic augmentations: which operations each sample goes through, magnitude bins, and the
image operations against PIL."""
import numpy as np
import pytest

from penstock import fn, pipeline_def, types
from penstock.auto_aug import augmentations as a
from penstock.auto_aug import auto_augment, rand_augment, trivial_augment
from penstock.auto_aug.core import augmentation

B = 32
K = 3


def _marker(k, **kw):
    """Augmentation k adds 1 at slot k and its parameter at slot K + k of a zero vector."""
    one, two = np.zeros(2 * K, np.float32), np.zeros(2 * K, np.float32)
    one[k], two[K + k] = 1, 1
    if "mag_range" not in kw:
        @augmentation(name=f"op{k}")
        def plain(data):
            return data + types.Constant(one)
        return plain

    @augmentation(name=f"op{k}", **kw)
    def op(data, param):
        return data + types.Constant(one) + param * types.Constant(two)
    return op


MARKERS = [_marker(0, mag_range=(0, 10)), _marker(1, mag_range=(5, 1), randomly_negate=True),
           _marker(2, mag_range=(0, 1))]


def _run(graph, seed=3, **kw):
    @pipeline_def(batch_size=B, num_threads=2, device_id=None, enable_conditionals=True, seed=seed, **kw)
    def pipe():
        x = fn.external_source(source=lambda: [np.zeros(2 * K, np.float32)] * B, batch=True)
        return graph(x)
    return pipe().run()[0].as_array()


def _mag(aug, b, bins):
    lo, hi = aug.mag_range
    return lo + (hi - lo) * b / (bins - 1)


def test_rand_augment_applies_n_operations_at_magnitude_m():
    n, m, bins = 2, 3, 11
    out = _run(lambda x: rand_augment.apply_rand_augment(MARKERS, x, n=n, m=m, num_magnitude_bins=bins))
    counts, params = out[:, :K], out[:, K:]
    np.testing.assert_array_equal(counts.sum(axis=1), n)
    assert (counts > 0).sum(axis=0).min() > 0  # every operation is picked somewhere
    for k, aug in enumerate(MARKERS):
        mag = _mag(aug, m, bins)
        for c, p in zip(counts[:, k].astype(int), params[:, k]):
            allowed = {round(float(s * mag), 4) for s in ((-c, -c + 2, c) if aug.randomly_negate else (c,))}
            assert round(float(p), 4) in allowed


def test_trivial_augment_applies_one_operation_with_a_random_bin():
    bins = 5
    out = np.concatenate([_run(lambda x: trivial_augment.apply_trivial_augment(MARKERS, x, num_magnitude_bins=bins),
                               seed=s) for s in range(3)])
    counts, params = out[:, :K], out[:, K:]
    np.testing.assert_array_equal(counts.sum(axis=1), 1)
    seen_bins = set()
    for k, aug in enumerate(MARKERS):
        mags = [round(_mag(aug, b, bins), 4) for b in range(bins)]
        for p in params[counts[:, k] == 1, k]:
            v = round(float(abs(p) if aug.randomly_negate else p), 4)
            assert v in mags
            seen_bins.add((k, mags.index(v)))
    assert len(seen_bins) > bins  # bins vary per sample


def test_auto_augment_follows_sub_policies_and_probabilities():
    policy = auto_augment.Policy("test", 6, [[(MARKERS[0], 1.0, 2), (MARKERS[1], 0.0, 1)],
                                             [(MARKERS[2], 0.5, 4), (_marker(1), 1.0, None)]])
    out = _run(lambda x: auto_augment.apply_auto_augment(policy, x))
    counts, params = out[:, :K], out[:, K:]
    first = counts[:, 0] == 1
    assert first.any() and (~first).any()
    np.testing.assert_array_equal(counts[first], [[1, 0, 0]] * first.sum())
    np.testing.assert_allclose(params[first, 0], _mag(MARKERS[0], 2, 6))
    second = counts[~first]
    np.testing.assert_array_equal(second[:, 1], 1)       # probability 1
    applied = second[:, 2] == 1                             # probability 0.5
    assert applied.any() and (~applied).any()
    np.testing.assert_allclose(params[~first, 2][applied], _mag(MARKERS[2], 4, 6), rtol=1e-6)


def test_policies_need_conditionals():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda: [np.zeros((4, 4, 3), np.uint8)] * 2, batch=True, layout="HWC")
        return trivial_augment.trivial_augment_wide(x)

    with pytest.raises(RuntimeError, match="enable_conditionals=True"):
        pipe()


def _images(n=6, seed=0):
    rng = np.random.default_rng(seed)
    # low-contrast images, so that auto-contrast and equalize have work to do
    return [(rng.integers(40, 180, (9 + i, 11, 3))).astype(np.uint8) for i in range(n)]


def _apply(aug, imgs, magnitude_bin=None, bins=11):
    @pipeline_def(batch_size=len(imgs), num_threads=2, device_id=None, enable_conditionals=True)
    def pipe():
        x = fn.external_source(source=lambda: imgs, batch=True, layout="HWC")
        if aug.mag_range is None:
            return aug(x)
        return aug(x, magnitude_bin=magnitude_bin, num_magnitude_bins=bins)
    out = pipe().run()[0]
    return [out.at(i) for i in range(len(imgs))]


def test_augmentations_map_magnitude_bins_to_parameters():
    imgs = _images()
    # posterize bin 5 of (0, 4) on 11 bins: 2 bits kept (bin 0: at least one), as DALI's posterize;
    # solarize bin 4 of (256, 0): threshold 153.6
    for img, out in zip(imgs, _apply(a.posterize, imgs, 5)):
        np.testing.assert_array_equal(out, img & 0xC0)
    for img, out in zip(imgs, _apply(a.posterize, imgs, 0)):
        np.testing.assert_array_equal(out, img & 0x80)
    for img, out in zip(imgs, _apply(a.solarize, imgs, 4)):
        np.testing.assert_array_equal(out, np.where(img < 153.6, img, 255 - img))
    for img, out in zip(imgs, _apply(a.solarize_add, imgs, 10)):
        np.testing.assert_array_equal(out, np.where(img < 128, np.minimum(img.astype(int) + 110, 255), img))
    # brightness bin 10 of (0, 0.9), randomly negated: factor 1.9 or 0.1
    for img, out in zip(imgs, _apply(a.brightness, imgs, 10)):
        refs = [np.clip(np.floor(img * f + 0.5), 0, 255) for f in (1.9, 0.1)]
        assert min(np.abs(out.astype(float) - r).max() for r in refs) <= 1
    for img, out in zip(imgs, _apply(a.invert, imgs)):
        np.testing.assert_array_equal(out, 255 - img)


@pytest.mark.parametrize("policy", ["auto", "rand", "trivial", "trivial_shape", "reduced_image_net", "svhn",
                                    "reduced_cifar10"])
def test_policies_run_on_images(policy):
    imgs = _images(16, seed=4)

    @pipeline_def(batch_size=16, num_threads=2, device_id=None, enable_conditionals=True, seed=5)
    def pipe():
        x = fn.external_source(source=lambda: imgs, batch=True, layout="HWC")
        if policy == "auto":
            return auto_augment.auto_augment(x)
        if policy in auto_augment.POLICIES:
            return auto_augment.auto_augment(x, policy)
        if policy == "rand":
            return rand_augment.rand_augment(x, n=3, m=20)
        if policy == "trivial":
            return trivial_augment.trivial_augment_wide(x)
        return trivial_augment.trivial_augment_wide(x, shape=x.shape(), excluded=["identity"])

    (out,) = pipe().run()
    changed = 0
    for i, img in enumerate(imgs):
        assert out.at(i).shape == img.shape and out.at(i).dtype == np.uint8
        changed += not np.array_equal(out.at(i), img)
    assert changed >= 8


def test_seed_makes_policies_reproducible_whatever_the_pipeline_seed():
    outs = [_run(lambda x: trivial_augment.apply_trivial_augment(MARKERS, x, num_magnitude_bins=5, seed=7),
                 seed=pipeline_seed) for pipeline_seed in (1, 2)]
    np.testing.assert_array_equal(outs[0], outs[1])
    # distinct streams per random operator: the op pick and the magnitude bin are not locked together
    picks, bins = outs[0][:, :K].argmax(axis=1), np.round(outs[0][:, K:].sum(axis=1), 4)
    assert len(set(zip(picks.tolist(), bins.tolist()))) > K


def test_signed_bin_gives_the_sign_of_randomly_negated_magnitudes():
    from penstock.auto_aug.core import signed_bin
    imgs = _images(4)
    signs = [np.int32(s) for s in (0, 1, 1, 0)]

    @pipeline_def(batch_size=4, num_threads=2, device_id=None, enable_conditionals=True)
    def pipe():
        x = fn.external_source(source=lambda: imgs, batch=True, layout="HWC")
        sign = fn.external_source(source=lambda: signs, batch=True)
        return a.brightness(x, magnitude_bin=signed_bin(10, random_sign=sign), num_magnitude_bins=11)
    out, = pipe().run()
    for img, s, i in zip(imgs, signs, range(4)):  # bin 10 of (0, 0.9): factor 1.9, negated 0.1
        ref = np.clip(np.floor(img * (0.1 if s else 1.9) + 0.5), 0, 255)
        assert np.abs(out.at(i).astype(float) - ref).max() <= 1
    with pytest.raises(ValueError, match="random_sign cannot be given together with seed"):
        signed_bin(3, random_sign=object(), seed=1)


def test_policy_names_and_their_arguments_are_checked():
    with pytest.raises(ValueError, match="policy_name must be one of"):
        auto_augment.auto_augment(None, "cifar")
    with pytest.raises(ValueError, match="'reduced_image_net' has no translations; do not give max_translate_abs"):
        auto_augment.auto_augment(None, "reduced_image_net", max_translate_abs=10)
