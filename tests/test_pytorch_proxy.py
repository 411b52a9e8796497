"""penstock.plugin.pytorch.experimental.proxy: a pipeline run on batches a torch DataLoader collects."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import penstock.plugin.pytorch.experimental.proxy as dali_proxy  # noqa: E402
from penstock import fn, pipeline_def, types  # noqa: E402
from penstock.plugin import pytorch as penstock_pytorch  # noqa: E402


@pipeline_def(batch_size=4, num_threads=1, device_id=None)
def scale_pipe():
    images = fn.external_source(name="images")
    offsets = fn.external_source(name="offsets")
    return fn.cast(images, dtype=types.FLOAT) * 0.5 + offsets


class Samples(torch.utils.data.Dataset):
    def __init__(self, transform, n=10):
        self.transform, self.n = transform, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        image = np.full((2, 3), i * 2, np.uint8)
        return self.transform(image, offsets=np.float32(i)), i


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_batches_are_pipeline_outputs(num_workers):
    with dali_proxy.DALIServer(scale_pipe()) as server:
        loader = dali_proxy.DataLoader(server, Samples(server.proxy), batch_size=4, num_workers=num_workers)
        seen = []
        for data, label in loader:
            assert isinstance(data, torch.Tensor) and data.dtype == torch.float32
            expected = np.stack([np.full((2, 3), i * 2 * 0.5 + i, np.float32) for i in label.tolist()])
            np.testing.assert_array_equal(data.numpy(), expected)
            seen += label.tolist()
    assert seen == list(range(10))


def test_proxy_records_inputs_and_checks_its_signature():
    server = dali_proxy.DALIServer(scale_pipe())
    ref = server.proxy(np.zeros(2), offsets=1.0)
    assert isinstance(ref, dali_proxy.DALIOutputSampleRef) and len(ref.inputs) == 2
    with pytest.raises(TypeError):
        server.proxy(np.zeros(2))
    with pytest.raises(RuntimeError, match="not running"):
        server.produce_data(ref)


def test_plugin_module_is_the_same_object_under_both_names():
    import penstock_pytorch.experimental.proxy as direct
    assert direct is dali_proxy and penstock_pytorch.experimental.proxy is dali_proxy
