// Several small arrays in one buffer, each at an offset aligned to `alignment` bytes: a kernel
// launch's per-sample parameters go to the device in one copy. Packed with the GIL held: numpy
// gives it away to zero the buffer and to copy each part of more than a few hundred bytes.
#pragma once
#include <utility>
#include <vector>

#include "engine/kernel.h"

namespace penstock {

// The bytes of `parts` (C-contiguous) back to back in one uint8 array, each from a multiple of
// `alignment` (the gaps zeroed), and each part's byte offset.
std::pair<ArrayOf<uint8_t>, I64Array> pack_parts(const std::vector<Array>& parts, int64_t alignment);

}  // namespace penstock
