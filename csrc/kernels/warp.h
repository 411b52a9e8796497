// warp_affine (warp.cpp): an affine warp of (frames, H, W, C) samples.
#pragma once
#include <optional>

#include "engine/kernel.h"

namespace penstock {

void warp_affine(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets, Array dst,
                 I64Array dst_shapes, I64Array dst_offsets, int dtype, ArrayOf<float> matrices, int interp,
                 std::optional<float> fill);

// rotate's plan for images of shapes [N, 4] (frames, H, W, C) turned by `angles` [N] degrees
// counter-clockwise, with the GIL held (a Python loop over the samples and numpy's [N, 2] tables
// before): the output sizes [N, 2] (H, W), the input's with `keep_size`, else the rotated bounding box
// (a 1e-2 tolerance before rounding up), each extent one larger where that keeps the parity of the
// input extent it mostly comes from, so that the centre stays on the pixel grid;
I64Array rotated_sizes(ArrayOf<double> angles, I64Array shapes, bool keep_size);
// and the output -> input maps [N, 2, 3] (float32, worked out in double) of those rotations about the
// centres of images of `shapes` turned into outputs of `out_hw` [N, 2].
ArrayOf<float> rotation_matrices(ArrayOf<double> angles, I64Array shapes, I64Array out_hw);

}  // namespace penstock
