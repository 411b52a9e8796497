// readers.caffe's and readers.caffe2's kernels (readers_caffe.cpp): the protobuf records of Caffe and
// Caffe2 LMDB databases (read by the lmdb library in Python), parsed a batch at a time.
#pragma once
#include <cstdint>

#include "engine/kernel.h"

namespace penstock {

// The records back to back in `records` (record i at starts[i], sizes[i] bytes), each a caffe.Datum
// -> (image bytes uint8, image sizes int64 [N], labels int32, label counts int64 [N]): a Datum's
// `data` (the image, encoded or raw, as stored) and its `label`, each empty where the Datum lacks it.
ArrayTuple caffe_datums(ThreadPool& pool, ArrayOf<uint8_t> records, I64Array starts, I64Array sizes);

// The same for caffe2.TensorProtos records: the tensors the reader's arguments name, in order (the
// image if `image`, the label(s) unless label_type is 4, `additional_inputs` tensors, the box if
// `bbox`). Per output four arrays: its samples' bytes back to back (uint8), their shapes int64
// [N, 3], their ranks int64 [N] (the shapes' leading columns that count) and their element types
// uint8 [N] (Caffe2Type).
enum Caffe2Type : uint8_t { kCaffe2U8 = 0, kCaffe2I32 = 1, kCaffe2F32 = 2, kCaffe2I64 = 3 };
ArrayTuple caffe2_protos(ThreadPool& pool, ArrayOf<uint8_t> records, I64Array starts, I64Array sizes, bool image,
                         int64_t label_type, int64_t num_labels, int64_t additional_inputs, bool bbox);

}  // namespace penstock
