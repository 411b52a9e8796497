// readers.mxnet's kernel (readers_mxnet.cpp): MXNet RecordIO records split into image bytes and labels.
#pragma once
#include <tuple>

#include "engine/kernel.h"

namespace penstock {

// ranges: the records' bytes back to back (range i at starts[i], sizes[i] bytes) -> (image bytes
// uint8, image sizes int64 [N], labels float32, label counts int64 [N])
using RecordioRecords = std::tuple<ArrayOf<uint8_t>, I64Array, ArrayOf<float>, I64Array>;
RecordioRecords recordio_records(ThreadPool& pool, ArrayOf<uint8_t> ranges, I64Array starts, I64Array sizes);

}  // namespace penstock
