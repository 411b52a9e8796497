"""fn.shapes (DataNode.shape()) and fn.get_property in pipelines."""
import numpy as np
import pytest
from pipeline_run import run_once

from penstock import fn, types

IMAGES = [np.zeros((4, 5, 3), np.uint8), np.zeros((6, 7, 1), np.uint8)]


@pytest.mark.parametrize("dtype, np_type", [(types.INT32, np.int32), (types.UINT32, np.uint32),
                                            (types.INT64, np.int64), (types.UINT64, np.uint64),
                                            (types.FLOAT, np.float32), (types.FLOAT64, np.float64)])
def test_shapes_in_each_supported_type(dtype, np_type):
    (out,) = run_once(lambda x: fn.shapes(x, dtype=dtype), IMAGES)
    for img, shape in zip(IMAGES, out):
        assert shape.dtype == np_type
        np.testing.assert_array_equal(shape, img.shape)


@pytest.mark.parametrize("dtype", [types.UINT8, types.INT16, types.INT8, types.UINT16, types.FLOAT16, types.BOOL])
def test_shapes_refuses_types_too_narrow_for_extents(dtype):
    with pytest.raises(RuntimeError, match=f"shapes .*dtype {dtype.name} is not supported"):
        run_once(lambda x: fn.shapes(x, dtype=dtype), IMAGES)


def test_get_property_layout():
    (out,) = run_once(lambda x: fn.get_property(x, key="layout"), IMAGES)
    assert [bytes(s).decode() for s in out] == ["HWC", "HWC"]
