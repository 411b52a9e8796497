// A batch's bookkeeping from its shapes [N, D]: each sample's volume, and where each sample starts
// when the samples lie back to back. Every batch a pipeline makes needs them, and numpy gives the
// GIL away on [N, D] arrays of a batch's size: a pipeline thread then waits to take it back while
// the thread of a training loop runs Python. These keep the GIL (bindings.cpp).
#pragma once
#include "engine/kernel.h"

namespace penstock {

// The product of each row of `shapes` [N, D] (1 when D is 0).
I64Array shape_volumes(const I64Array& shapes);

// A writable table [rows, width] of zeros (numpy's zeros give the GIL away to calloc past 1 KB).
I64Array zero_table(int64_t rows, int64_t width);

// Exclusive prefix sums of shape_volumes(shapes): sample k's first element in a packed buffer.
I64Array packed_offsets(const I64Array& shapes);

// Samples of `shapes` [N, D] (of one-byte elements) placed back to back in blocks of `block_bytes`,
// in order, a sample that does not fit a block's rest starting the next (one larger than a block
// takes a block of its own): per sample (block, byte offset, bytes) [N, 3], and each block's bytes
// used [B].
ArrayTuple places_in_blocks(const I64Array& shapes, int64_t block_bytes);

// A copy of `table` [N, M] with its columns [first, first + K) set from columns [values_first,
// values_first + K) of `values`: [V] (every row alike) or [N, V]; K is `count`, or all of V from
// values_first when negative.
I64Array with_columns(const I64Array& table, int64_t first, const I64Array& values, int64_t values_first = 0,
                      int64_t count = -1);

// Rows `rows` [M] of `table` [N, ...] (table[rows] in numpy, which gives the GIL away to gather rows).
I64Array take_rows(const I64Array& table, const I64Array& rows);

// A copy of table [N, ...] with rows `rows` [M] set from values [M, ...] (table[rows] = values).
I64Array put_rows(const I64Array& table, const I64Array& rows, const I64Array& values);

// The first row where `a` and `b` (alike, [N, K]) differ, or -1.
int64_t first_differing_row(const I64Array& a, const I64Array& b);

// Regions [N, 2K] (starts, then ends; float64) that cover columns [first, first + K) of `shapes`
// whole: zeros, then the extents.
ArrayOf<double> whole_regions(const I64Array& shapes, int64_t first, int64_t count);

// Shapes [N, count + 2] (outer, spatial..., channels) of shapes [N, D] whose spatial dims are
// [first, first + count): the dims before them multiplied into the outer extent, those after into the
// channels (1 where there are none).
I64Array outer_spatial_channels(const I64Array& shapes, int64_t first, int64_t count);

// Regions [N, 2K] (starts, then ends; float64) of windows [N, 2K] (anchors, then sizes).
ArrayOf<double> window_regions(const I64Array& windows);

// The (H, W, C) image planes of a batch of shapes [N, D] and first elements `offsets` [N] whose axes
// F, C, H, W are columns `frame`, `channel`, `height`, `width` (-1: absent): each frame of a sequence
// and each channel of a channel-first image is a plane. Returns each plane's sample [M], shape
// [M, 3] (a channel-first plane has one channel) and first element [M], in the batch and in a batch
// of the same shapes whose samples start at `out_offsets` [N].
ArrayTuple image_planes(const I64Array& shapes, const I64Array& offsets, const I64Array& out_offsets, int64_t frame,
                        int64_t channel, int64_t height, int64_t width);

// The first sample whose window (anchors, windows: [N, D] like shapes) reaches outside its shape, or -1.
int64_t first_window_outside(const I64Array& shapes, const I64Array& anchors, const I64Array& windows);

// The first image whose window (rows (y, x, h, w) of `windows` [N, 4]) is empty or reaches outside
// it (rows (H, W, ...) of `shapes` [N, 2 or more]), or -1. first_window_outside's form over the rows
// as they are: its [N, 2] columns cut from them were three numpy copies a batch, each giving the GIL
// away (tests/test_gil_handbacks.py counted them).
int64_t first_window_outside_image(const I64Array& windows, const I64Array& shapes);

}  // namespace penstock
