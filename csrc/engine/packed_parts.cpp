#include "engine/packed_parts.h"

#include <cstring>
#include <stdexcept>

namespace penstock {

std::pair<ArrayOf<uint8_t>, I64Array> pack_parts(const std::vector<Array>& parts, int64_t alignment) {
  if (alignment < 1) throw std::invalid_argument("pack_parts: alignment must be positive");
  const int64_t n = int64_t(parts.size());
  I64Array offsets = I64Array::empty({n});
  int64_t* at = offsets.mutable_data();
  int64_t total = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (!parts[k].c_contiguous()) throw std::invalid_argument("pack_parts: part " + std::to_string(k) + " is not contiguous");
    at[k] = total;
    total += (parts[k].nbytes() + alignment - 1) / alignment * alignment;
  }
  auto packed = ArrayOf<uint8_t>::empty({total});
  uint8_t* bytes = packed.mutable_data();
  for (int64_t k = 0; k < n; ++k) {
    const int64_t size = parts[k].nbytes(), end = k + 1 < n ? at[k + 1] : total;
    if (size) std::memcpy(bytes + at[k], parts[k].data(), size_t(size));
    std::memset(bytes + at[k] + size, 0, size_t(end - at[k] - size));
  }
  return {packed, offsets};
}

}  // namespace penstock
