// tfrecord_read (readers_tfrecord.cpp): tf.train.Example records read and parsed, a batch per call.
#pragma once
#include <string>
#include <tuple>
#include <vector>

#include "engine/kernel.h"

namespace penstock {

// One feature of a batch: (values of every sample back to back, counts int64 [N], found uint8 [N]).
using TfrecordFeature = std::tuple<Array, I64Array, ArrayOf<uint8_t>>;

// Record i is bytes [offsets[i], offsets[i] + sizes[i]) of paths[i]; one entry per feature name.
std::vector<TfrecordFeature> tfrecord_read(ThreadPool& pool, const std::vector<std::string>& paths, I64Array offsets,
                                           I64Array sizes, const std::vector<std::string>& names,
                                           const std::vector<int>& kinds);

// The records of the TFRecord file `path` as its index lists them: (offsets, sizes) int64 [N]. Each
// record's length is checked against its CRC before it is trusted; a damaged or cut file throws,
// naming the file and the record's offset.
std::tuple<I64Array, I64Array> tfrecord_index(const std::string& path);

}  // namespace penstock
