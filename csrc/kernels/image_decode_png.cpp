// PNG through libpng: every colour type and bit depth to 8-bit (16-bit keeps the high byte,
// as PIL does), palette expanded (with alpha when it has a tRNS chunk), eXIf orientation.
// A region decode reads rows only down to the window's last row.
//
// libpng reports errors through our error_fn, which longjmps back to guarded(); frames
// between setjmp and longjmp hold no C++ objects.
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

#include <png.h>

#include "kernels/image_decode.h"

namespace penstock {
namespace image {
namespace {

struct Reader {
  png_structp png = nullptr;
  png_infop info = nullptr;
  const uint8_t* data = nullptr;
  size_t size = 0, pos = 0;
  char message[256] = "";
  std::vector<uint8_t> pixels;      // one row, or the whole image when interlaced
  std::vector<png_bytep> row_ptrs;  // interlaced only
  ~Reader() {
    if (png) png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
  }
};

void read_fn(png_structp png, png_bytep out, size_t n) {
  auto* r = static_cast<Reader*>(png_get_io_ptr(png));
  if (n > r->size - r->pos) png_error(png, "truncated PNG data");
  std::memcpy(out, r->data + r->pos, n);
  r->pos += n;
}

[[noreturn]] void error_fn(png_structp png, png_const_charp msg) {
  auto* r = static_cast<Reader*>(png_get_error_ptr(png));
  std::snprintf(r->message, sizeof(r->message), "%s", msg);
  png_longjmp(png, 1);
}

void warning_fn(png_structp, png_const_charp) {}

// Runs body (which must keep no C++ objects on its own stack frame) under libpng's error
// handler.
template <typename F>
void guarded(Reader& r, F&& body) {
  if (setjmp(png_jmpbuf(r.png))) throw DecodeError(std::string("invalid PNG: ") + r.message);
  body();
}

void create(Reader& r, const uint8_t* data, size_t size) {
  if (size < 8 || png_sig_cmp(data, 0, 8)) throw DecodeError("invalid PNG signature");
  r.data = data;
  r.size = size;
  r.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &r, error_fn, warning_fn);
  if (!r.png) throw DecodeError("cannot create a PNG decoder");
  r.info = png_create_info_struct(r.png);
  if (!r.info) throw DecodeError("cannot create a PNG decoder");
}

// Deflate packs at most 1032 bytes into one byte (258-byte matches in two bits).
constexpr uint64_t kMaxDeflateRatio = 1032;

// Inside guarded(): reads the chunks up to the image data; rejects a header that claims more
// pixel data than the file could hold.
void read_info(Reader& r) {
  png_set_read_fn(r.png, &r, read_fn);
  png_read_info(r.png, r.info);
  uint64_t raw = uint64_t(png_get_image_height(r.png, r.info)) * (png_get_rowbytes(r.png, r.info) + 1);
  if (raw > uint64_t(r.size) * kMaxDeflateRatio)
    png_error(r.png, "file too small for the image size in its header (corrupt header or truncated file)");
}

bool has_trns(const Reader& r) { return png_get_valid(r.png, r.info, PNG_INFO_tRNS) != 0; }

Model model_of(const Reader& r) {
  switch (png_get_color_type(r.png, r.info)) {
    case PNG_COLOR_TYPE_GRAY: return Model::Gray;
    case PNG_COLOR_TYPE_GRAY_ALPHA: return Model::GrayAlpha;
    case PNG_COLOR_TYPE_RGB_ALPHA: return Model::RGBA;
    case PNG_COLOR_TYPE_PALETTE: return has_trns(r) ? Model::RGBA : Model::RGB;
    default: return Model::RGB;
  }
}

}  // namespace

ImageInfo read_png_info(const uint8_t* data, size_t size) {
  Reader r;
  create(r, data, size);
  ImageInfo info;
  guarded(r, [&] {
    read_info(r);
    info.height = png_get_image_height(r.png, r.info);
    info.width = png_get_image_width(r.png, r.info);
    info.model = model_of(r);
#ifdef PNG_eXIf_SUPPORTED  // libpng >= 1.6.31
    png_uint_32 exif_size = 0;
    png_bytep exif = nullptr;
    if (png_get_eXIf_1(r.png, r.info, &exif_size, &exif) && exif)
      info.orientation = exif_orientation(exif, exif_size);
#endif
  });
  return info;
}

void decode_png(const uint8_t* data, size_t size, const DecodeRequest& req, uint8_t* dst) {
  Reader r;
  create(r, data, size);
  guarded(r, [&] {
    read_info(r);
    int color = png_get_color_type(r.png, r.info), depth = png_get_bit_depth(r.png, r.info);
    if (depth == 16) png_set_strip_16(r.png);
    if (color == PNG_COLOR_TYPE_PALETTE) {
      png_set_palette_to_rgb(r.png);
      if (has_trns(r)) png_set_tRNS_to_alpha(r.png);
    }
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(r.png);
    bool interlaced = png_get_interlace_type(r.png, r.info) != PNG_INTERLACE_NONE;
    if (interlaced) png_set_interlace_handling(r.png);
    png_read_update_info(r.png, r.info);

    int64_t height = png_get_image_height(r.png, r.info), width = png_get_image_width(r.png, r.info);
    int channels = model_channels(req.model);
    size_t row_bytes = png_get_rowbytes(r.png, r.info);
    if (model_of(r) != req.model || row_bytes != size_t(width) * channels)
      throw DecodeError("unexpected PNG pixel layout");
    const Window& w = req.region;
    if (w.y < 0 || w.x < 0 || w.h < 1 || w.w < 1 || w.y + w.h > height || w.x + w.w > width)
      throw DecodeError("PNG region outside the image");

    size_t out_row = size_t(w.w) * channels, col0 = size_t(w.x) * channels;
    if (interlaced) {  // every pass covers the whole image: decode all of it, then cut
      r.pixels.resize(row_bytes * height);
      r.row_ptrs.resize(height);
      for (int64_t y = 0; y < height; ++y) r.row_ptrs[y] = r.pixels.data() + y * row_bytes;
      png_read_image(r.png, r.row_ptrs.data());
      for (int64_t y = 0; y < w.h; ++y)
        std::memcpy(dst + y * out_row, r.row_ptrs[w.y + y] + col0, out_row);
      return;
    }
    bool full_rows = w.x == 0 && w.w == width;
    if (!full_rows || w.y > 0) r.pixels.resize(row_bytes);  // rows not written in place
    for (int64_t y = 0; y < w.y + w.h; ++y) {
      bool inside = y >= w.y;
      png_bytep target = inside && full_rows ? dst + (y - w.y) * out_row : r.pixels.data();
      png_read_row(r.png, target, nullptr);
      if (inside && !full_rows) std::memcpy(dst + (y - w.y) * out_row, target + col0, out_row);
    }
  });
}

}  // namespace image
}  // namespace penstock
