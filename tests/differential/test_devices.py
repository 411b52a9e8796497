"""Pipelines with and without a device_id on a machine without CUDA (DALI's CPU-only use): CPU
operators run; a GPU or mixed operator is refused at build with the words DALI's tests match."""
import dataclasses
import io
from typing import Any

import numpy as np
import pytest

from _harness import _const, check_case

CUDA_CAPABLE = "The pipeline requires a CUDA-capable GPU but "
NO_CUDA = "You are trying to create a GPU DALI pipeline while CUDA is not available."


def _jpeg() -> np.ndarray:
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(buf, "JPEG")
    return np.frombuffer(buf.getvalue(), np.uint8)


GRAPHS = {
    "cpu_only": lambda lib, d: d + 1,
    "to_gpu_at_the_end": lambda lib, d: d.gpu(),
    "gpu_operator": lambda lib, d: lib.fn.rotate(d.gpu(), angle=25),
    "gpu_external_source": lambda lib, d: lib.fn.external_source(source=_const([np.zeros(3)] * 2), device="gpu"),
    "mixed_decoder": lambda lib, d: lib.fn.decoders.image(lib.fn.external_source(source=_const([_jpeg()] * 2)),
                                                          device="mixed"),
}


@dataclasses.dataclass
class DeviceCase:
    id: str
    name: str
    device_id: Any
    words: str | None
    inputs: tuple = ("images",)
    random: bool = False
    tolerance: float = 1

    def graph(self, lib: Any, node: Any) -> Any:
        return GRAPHS[self.name](lib, node)


CASES = [DeviceCase(f"device:{name}:device_id={dev}", name, dev,
                    None if name == "cpu_only" else CUDA_CAPABLE if dev is None else NO_CUDA)
         for dev in (None, 0) for name in GRAPHS]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_device_case(case):
    check_case(case)
