// EXIF orientation (tag 0x0112 in IFD0) from a TIFF-structured block, both byte orders.
// Every offset read from the file is bounds-checked; anything malformed means "no rotation".
#include "kernels/image_decode.h"

namespace penstock {
namespace image {

int exif_orientation(const uint8_t* tiff, size_t size) {
  if (size < 8) return 1;
  bool little;
  if (tiff[0] == 'I' && tiff[1] == 'I') little = true;
  else if (tiff[0] == 'M' && tiff[1] == 'M') little = false;
  else return 1;
  auto u16 = [&](size_t at) -> uint32_t {
    return little ? tiff[at] | (tiff[at + 1] << 8) : (tiff[at] << 8) | tiff[at + 1];
  };
  auto u32 = [&](size_t at) -> uint64_t {
    return little ? uint64_t(u16(at)) | (uint64_t(u16(at + 2)) << 16)
                  : (uint64_t(u16(at)) << 16) | u16(at + 2);
  };
  if (u16(2) != 42) return 1;
  uint64_t ifd = u32(4);
  if (ifd + 2 > size) return 1;
  uint32_t count = u16(ifd);
  constexpr uint32_t kShort = 3;
  for (uint32_t k = 0; k < count; ++k) {
    uint64_t entry = ifd + 2 + uint64_t(k) * 12;
    if (entry + 12 > size) return 1;
    if (u16(entry) != 0x0112) continue;
    if (u16(entry + 2) != kShort || u32(entry + 4) < 1) return 1;
    uint32_t value = u16(entry + 8);  // a single SHORT sits left-aligned in the value field
    return value >= 1 && value <= 8 ? int(value) : 1;
  }
  return 1;
}

}  // namespace image
}  // namespace penstock
