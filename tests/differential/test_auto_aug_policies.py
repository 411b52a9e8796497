"""The automatic augmentations' policies and suites against DALI 2.4's: the same operations (by
name), probabilities, magnitude bins and ranges, and which are randomly negated."""
import pytest

import penstock.auto_aug.auto_augment as ours_aa
import penstock.auto_aug.rand_augment as ours_ra
from penstock.auto_aug import core as ours_core

from _harness import HAVE_DALI

if HAVE_DALI:
    import nvidia.dali.auto_aug.auto_augment as dali_aa
    import nvidia.dali.auto_aug.rand_augment as dali_ra


def _aug(aug) -> tuple:
    mag_range = getattr(aug, "mag_range", None)
    return (aug.name, tuple(float(v) for v in mag_range) if mag_range is not None else None,
            bool(aug.randomly_negate))


def _policy(policy) -> tuple:
    return (policy.name, policy.num_magnitude_bins,
            [[(_aug(aug), p, b) for aug, p, b in sub] for sub in policy.sub_policies])


@pytest.mark.parametrize("name", ["get_image_net_policy", "get_reduced_image_net_policy", "get_svhn_policy",
                                  "get_reduced_cifar10_policy"])
@pytest.mark.parametrize("kwargs", [{}, {"use_shape": True}, {"max_translate_abs": (30, 40)},
                                    {"use_shape": True, "max_translate_rel": 0.5}])
def test_auto_augment_policies_match(name, kwargs):
    if name == "get_reduced_image_net_policy" and kwargs:
        pytest.skip("the reduced ImageNet policy takes no arguments")
    assert _policy(getattr(ours_aa, name)(**kwargs)) == _policy(getattr(dali_aa, name)(**kwargs))


@pytest.mark.parametrize("name", ["get_rand_augment_suite", "get_rand_augment_non_monotonic_suite"])
@pytest.mark.parametrize("kwargs", [{}, {"use_shape": True}, {"max_translate_abs": 20}])
def test_rand_augment_suites_match(name, kwargs):
    assert [_aug(a) for a in getattr(ours_ra, name)(**kwargs)] == [_aug(a) for a in getattr(dali_ra, name)(**kwargs)]


def test_signed_bin_is_offered():
    import nvidia.dali.auto_aug.core as dali_core
    assert callable(ours_core.signed_bin) and callable(dali_core.signed_bin)
    with pytest.raises(TypeError, match="magnitude_bin must be an int"):
        ours_core.signed_bin(1.5)


@pytest.mark.parametrize("kwargs", [{}, {"use_shape": True}, {"max_translate_abs": 20}])
def test_trivial_augment_suite_matches(kwargs):
    import nvidia.dali.auto_aug.trivial_augment as dali_ta
    import penstock.auto_aug.trivial_augment as ours_ta
    assert ([_aug(a) for a in ours_ta.get_trivial_augment_wide_suite(**kwargs)]
            == [_aug(a) for a in dali_ta.get_trivial_augment_wide_suite(**kwargs)])
