"""multi_paste: canvases with regions of input samples pasted in order (csrc/cuda/paste.cu)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ._launch import KernelFamily, descriptors, image_type, volumes


def _address(buf: Any) -> int:
    if isinstance(buf, np.ndarray):  # host buffers stand in for device ones where kernels are emulated
        return buf.ctypes.data
    return int(buf.data.ptr)


class PasteKernels(KernelFamily):
    def multi_paste(self, pool: Any, sources: Sequence[Any], src_type: int, dst: Any, dst_shapes: np.ndarray,
                    dst_offsets: np.ndarray, dst_type: int, regions: np.ndarray, region_start: np.ndarray) -> None:
        """One thread per output element; the regions and the input batches' addresses go up with the
        descriptors."""
        n, nd = dst_shapes.shape
        if nd != 4:
            raise ValueError("multi_paste: output samples must be (frames, H, W, C)")
        in_t, out_t = image_type(src_type, "multi_paste"), image_type(dst_type, "multi_paste")
        regions = np.ascontiguousarray(regions, np.int64).reshape(-1, 10)
        desc = descriptors(n, 7)
        desc[:, 0] = dst_offsets
        desc[:, 1] = volumes(dst_shapes)
        desc[:, 2:5] = dst_shapes[:, 1:4]
        desc[:, 5] = region_start[:-1]
        desc[:, 6] = region_start[1:]
        addresses = np.array([_address(s) for s in sources], np.uint64)
        self._launch_batch("paste", f"multi_paste_{in_t}_{out_t}", desc[:, 1], desc, (dst,),
                           (lambda p: p[0], lambda p: p[1]), (addresses, regions if len(regions) else np.zeros((1, 10), np.int64)))
