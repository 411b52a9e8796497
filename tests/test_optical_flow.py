"""optical_flow: declared with DALI 2.4's arguments, not implemented: building a pipeline with it
raises NotImplementedError naming the operator and what it would need (NVIDIA's optical-flow
engine)."""
import numpy as np
import pytest

from penstock import fn, pipeline_def

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")
from penstock._cuda import available as cuda_available  # noqa: E402


@pytest.mark.skipif(not cuda_available(), reason="no CUDA device")
def test_building_optical_flow_says_it_is_not_implemented():
    @pipeline_def(batch_size=1, num_threads=1, device_id=0)
    def p():
        frames = fn.external_source(source=lambda: [np.zeros((2, 64, 64, 3), np.uint8)], layout="FHWC")
        return fn.optical_flow(frames.gpu(), output_grid=4, preset=0.5, enable_temporal_hints=True)
    with pytest.raises(NotImplementedError, match=r"optical_flow.*not implemented.*optical-flow engine"):
        p().build()
