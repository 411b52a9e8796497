// Shared pieces of the CPU image decoders: what a header tells us, how a decode is planned
// (crop window, DCT scale, orientation, output colour), and the per-format entry points.
// Every format decoder writes a region of the image in *stored* orientation, in its own pixel
// model; finish_pixels() then applies the EXIF orientation and the requested output colour.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>

#include "engine/kernel.h"

namespace penstock {
namespace image {

// DALIImageType codes.
enum OutputType : int { kRGB = 0, kBGR = 1, kGray = 2, kYCbCr = 3, kAnyData = 4 };

enum class Format { Unknown, Jpeg, Png, Bmp, Pnm, Tiff, Webp, Jpeg2000, Gif };

// Pixel layout a format decoder produces (interleaved uint8).
enum class Model { Gray, GrayAlpha, RGB, RGBA, BGR };

inline int model_channels(Model m) {
  switch (m) {
    case Model::Gray: return 1;
    case Model::GrayAlpha: return 2;
    case Model::RGBA: return 4;
    default: return 3;
  }
}

// A decode failure of one file; the batch driver turns it into SampleError(i, message).
struct DecodeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A format we recognise but leave to the Python fallback (Pillow): TIFF, WebP, JPEG 2000 and
// BMP compressions other than none/bitfields.
struct NeedsFallback : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What the header says. Sizes are stored (not display) orientation.
struct ImageInfo {
  int64_t height = 0, width = 0;
  Model model = Model::RGB;  // what the decoder delivers for ANY_DATA (the stored channels)
  int orientation = 1;       // EXIF 1..8
  bool luma_stored = false;  // a colour JPEG whose stored luma libjpeg can deliver as GRAY (not CMYK)
};

// Rows [y, y+h) and columns [x, x+w).
struct Window {
  int64_t y = 0, x = 0, h = 0, w = 0;
};

// What one format decoder is asked to produce.
struct DecodeRequest {
  Model model = Model::RGB;  // JPEG may be asked for BGR; others deliver info.model
  int scale_num = 8;         // JPEG only: DCT scaling by scale_num/8
  Window region;             // stored orientation, in (scaled) output pixels
  bool fast_idct = false;    // JPEG only
  bool fancy_upsampling = true;  // JPEG only: interpolated chroma (false: each chroma sample repeated)
  bool accept_corrupt = false;   // JPEG only: decode around corrupt data libjpeg only warns about
};

Format detect_format(const uint8_t* data, size_t size);
const char* format_name(Format f);

// Per format: read_*_info parses the header only; decode_* writes request.region into dst
// (rows of region.w * channels(request.model) bytes). Both throw DecodeError.
ImageInfo read_jpeg_info(const uint8_t* data, size_t size);
void decode_jpeg(const uint8_t* data, size_t size, const DecodeRequest& req, uint8_t* dst);
// Reads a JPEG's entropy-coded data through to its end marker as libjpeg-turbo does when strict (no
// pixels made but one row), throwing DecodeError where it finds corrupt data; bytes read through
// before in this process (by a hash of them) are not read again.
void verify_jpeg(const uint8_t* data, size_t size);
ImageInfo read_png_info(const uint8_t* data, size_t size);
void decode_png(const uint8_t* data, size_t size, const DecodeRequest& req, uint8_t* dst);
ImageInfo read_bmp_info(const uint8_t* data, size_t size);
void decode_bmp(const uint8_t* data, size_t size, const DecodeRequest& req, uint8_t* dst);
ImageInfo read_pnm_info(const uint8_t* data, size_t size);
void decode_pnm(const uint8_t* data, size_t size, const DecodeRequest& req, uint8_t* dst);

// EXIF orientation from a TIFF-structured EXIF block (starting at the byte-order mark);
// 1 when absent or malformed.
int exif_orientation(const uint8_t* tiff, size_t size);

// ---- orientation geometry ----------------------------------------------------------------

// EXIF orientation as "display = flips of (optionally transposed) stored": display pixel
// (r, c) shows stored pixel (a, b) where (a, b) = transpose ? (c, r) : (r, c), then a is
// mirrored when flip_rows and b when flip_cols.
struct Orientation {
  bool transpose = false, flip_rows = false, flip_cols = false;
};
Orientation orientation_from_exif(int exif);

// Maps a window given in display coordinates of an image whose stored size is (h, w) to the
// stored window it shows.
Window display_to_stored(const Window& display, int64_t stored_h, int64_t stored_w, Orientation o);

// Writes the display-oriented image of a stored region (h x w pixels in `model`) into dst with
// the output colour type. dst has (transpose ? w x h : h x w) pixels of output_channels().
void finish_pixels(const uint8_t* src, int64_t h, int64_t w, Model model, Orientation o,
                   int output_type, uint8_t* dst);

int output_channels(int output_type, Model stored);

// True when the decoder's pixels are already the requested output (no conversion pass).
bool model_is_output(Model m, int output_type);

// ---- the batch entry points (image_decode.cpp) ----------------------------------------------

std::tuple<I64Array, ArrayOf<bool>> peek_image_shapes(ThreadPool& pool, Array data, I64Array shapes,
                                                      I64Array offsets, int output_type, bool adjust_orientation,
                                                      std::optional<int64_t> max_pixels);

// verify_jpeg of every JPEG of an encoded batch (others are left alone): for decoders that decode
// them elsewhere (the GPU's) without a word about corrupt data. A corrupt one is its sample's
// SampleError.
void verify_jpegs(ThreadPool& pool, Array data, I64Array shapes, I64Array offsets);

// (out uint8, out_shapes int64 [N, 3], out_offsets int64 [N], fallback bool [N]), and with
// return_geometry the geometry float64 [N, 3]. With `into` (C-contiguous writeable arrays: blocks of
// pinned staging for an upload) and `places` (int64 [N, 3]: per sample a block of `into`, a byte
// offset and the bytes it may take there), where every sample fits its place, the pixels are written
// there: `out` is empty and out_offsets are the places' offsets. Otherwise `out` is a new array.
ArrayTuple decode_images(ThreadPool& pool, Array data, I64Array shapes, I64Array offsets, int output_type,
                         bool adjust_orientation, std::optional<I64Array> crop, std::optional<I64Array> target_hw,
                         bool use_fast_idct, bool return_geometry, bool fancy_upsampling,
                         std::optional<int64_t> max_pixels, bool accept_corrupt_jpeg,
                         std::optional<std::vector<Array>> into = std::nullopt,
                         std::optional<I64Array> places = std::nullopt);

}  // namespace image
}  // namespace penstock
