// Netpbm P1-P6: bitmaps (1 = black), grey and RGB maps, plain (ASCII) and raw (binary), any
// maxval up to 65535 (two big-endian bytes per raw sample above 255). Samples are scaled to
// 8 bits as round(v * 255 / maxval) with ties to even, clamped at maxval, which is what PIL does.
#include <cstring>
#include <vector>

#include "kernels/image_decode.h"

namespace penstock {
namespace image {
namespace {

struct Pnm {
  int kind = 0;  // the digit after 'P'
  int64_t width = 0, height = 0;
  uint32_t maxval = 1;
  size_t data_start = 0;  // first byte after the header
  bool plain() const { return kind <= 3; }
  bool bitmap() const { return kind == 1 || kind == 4; }
  int channels() const { return kind == 3 || kind == 6 ? 3 : 1; }
};

inline bool is_space(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Reads unsigned decimal tokens, skipping whitespace and '#' comments.
struct Tokens {
  const uint8_t* d;
  size_t n, pos;
  void skip_blanks() {
    while (pos < n) {
      if (d[pos] == '#') {
        while (pos < n && d[pos] != '\n' && d[pos] != '\r') ++pos;
      } else if (is_space(d[pos])) {
        ++pos;
      } else {
        break;
      }
    }
  }
  uint32_t number(uint32_t limit, const char* what) {
    skip_blanks();
    if (pos >= n || d[pos] < '0' || d[pos] > '9') throw DecodeError(std::string("invalid PNM ") + what);
    uint64_t v = 0;
    while (pos < n && d[pos] >= '0' && d[pos] <= '9') {
      v = v * 10 + (d[pos++] - '0');
      if (v > limit) throw DecodeError(std::string("PNM ") + what + " out of range");
    }
    return uint32_t(v);
  }
  // P1 packs bits without separators: one '0' or '1' per token.
  uint32_t bit() {
    skip_blanks();
    if (pos >= n) throw DecodeError("truncated PNM data");
    uint8_t c = d[pos++];
    if (c != '0' && c != '1') throw DecodeError("invalid PNM bitmap value");
    return c - '0';
  }
};

Pnm parse(const uint8_t* d, size_t n) {
  if (n < 3 || d[0] != 'P' || d[1] < '1' || d[1] > '6') throw DecodeError("invalid PNM header");
  Pnm p;
  p.kind = d[1] - '0';
  Tokens t{d, n, 2};
  p.width = t.number(1u << 30, "width");
  p.height = t.number(1u << 30, "height");
  if (!p.bitmap()) p.maxval = t.number(65535, "maxval");
  if (p.width < 1 || p.height < 1 || p.maxval < 1) throw DecodeError("invalid PNM dimensions");
  // Exactly one whitespace byte separates the header from raw data.
  if (t.pos >= n || !is_space(d[t.pos])) throw DecodeError("truncated PNM header");
  p.data_start = t.pos + 1;
  uint64_t samples = uint64_t(p.width) * p.height * p.channels();
  uint64_t available = n - p.data_start;
  uint64_t needed = p.kind == 4   ? (uint64_t(p.width) + 7) / 8 * p.height
                    : p.plain()   ? samples  // at least one character per sample
                    : samples * (p.maxval > 255 ? 2 : 1);
  if (needed > available) throw DecodeError("truncated PNM data");
  return p;
}

// 8-bit value of every sample value 0..maxval.
std::vector<uint8_t> scale_table(uint32_t maxval) {
  std::vector<uint8_t> lut(maxval + 1);
  for (uint32_t v = 0; v <= maxval; ++v) {
    uint32_t num = v * 255, q = num / maxval, rem = num % maxval;
    if (2 * rem > maxval || (2 * rem == maxval && (q & 1))) ++q;
    lut[v] = uint8_t(q);
  }
  return lut;
}

}  // namespace

ImageInfo read_pnm_info(const uint8_t* data, size_t size) {
  Pnm p = parse(data, size);
  ImageInfo info;
  info.height = p.height;
  info.width = p.width;
  info.model = p.channels() == 3 ? Model::RGB : Model::Gray;
  return info;
}

void decode_pnm(const uint8_t* data, size_t size, const DecodeRequest& req, uint8_t* dst) {
  Pnm p = parse(data, size);
  const Window& w = req.region;
  int c = p.channels();
  if (model_channels(req.model) != c || w.y < 0 || w.x < 0 || w.h < 1 || w.w < 1 ||
      w.y + w.h > p.height || w.x + w.w > p.width)
    throw DecodeError("PNM region outside the image");
  std::vector<uint8_t> lut = p.bitmap() ? std::vector<uint8_t>{255, 0} : scale_table(p.maxval);
  int64_t out_row = w.w * c;
  const uint8_t* raw = data + p.data_start;

  if (p.plain()) {  // sequential: read every sample up to the window's last row
    Tokens t{data, size, p.data_start};
    for (int64_t y = 0; y < w.y + w.h; ++y)
      for (int64_t x = 0; x < p.width; ++x)
        for (int k = 0; k < c; ++k) {
          uint32_t v = p.bitmap() ? t.bit() : t.number(~0u >> 1, "sample");
          if (y >= w.y && x >= w.x && x < w.x + w.w)
            dst[(y - w.y) * out_row + (x - w.x) * c + k] = lut[v < p.maxval ? v : p.maxval];
        }
    return;
  }
  for (int64_t r = 0; r < w.h; ++r) {
    int64_t y = w.y + r;
    uint8_t* out = dst + r * out_row;
    if (p.kind == 4) {
      const uint8_t* row = raw + y * ((p.width + 7) / 8);
      for (int64_t x = w.x; x < w.x + w.w; ++x) *out++ = lut[(row[x >> 3] >> (7 - (x & 7))) & 1];
    } else if (p.maxval > 255) {
      const uint8_t* s = raw + (y * p.width + w.x) * c * 2;
      for (int64_t k = 0; k < out_row; ++k, s += 2) {
        uint32_t v = (s[0] << 8) | s[1];
        out[k] = lut[v < p.maxval ? v : p.maxval];
      }
    } else {
      const uint8_t* s = raw + (y * p.width + w.x) * c;
      for (int64_t k = 0; k < out_row; ++k) out[k] = lut[s[k] < p.maxval ? s[k] : p.maxval];
    }
  }
}

}  // namespace image
}  // namespace penstock
