// Batch image decoding: format detection, per-sample planning (display-space crop window ->
// stored region, DCT scale from a size hint, output colour), and the two bindings:
//
//   peek_image_shapes(pool, data, shapes, offsets, output_type=ANY_DATA, adjust_orientation=True,
//                     max_pixels=None)
//       -> (shapes int64 [N, 3] (H, W, C) in display orientation, fallback bool [N])
//   decode_images(pool, data, shapes, offsets, output_type, adjust_orientation, crop=None,
//                 target_hw=None, use_fast_idct=False, return_geometry=False, fancy_upsampling=True,
//                 max_pixels=None, accept_corrupt_jpeg=False, into=None, places=None)
//       -> (out uint8 [total], out_shapes int64 [N, 3], out_offsets int64 [N], fallback bool [N]
//           [, geometry float64 [N, 3] with return_geometry]); with `into` and `places`, where every
//           sample fits its place, out is empty and sample i is at into[places[i, 0]] + out_offsets[i]
//
// An image whose header claims more than max_pixels pixels fails before anything is decoded
// (decompression bombs: a few MB of file that decode to GBs).
//
// `fallback[i]` marks a sample in a format recognised but not decoded natively (TIFF, WebP,
// JPEG 2000, RLE BMP): its shape row is zeros and it has no bytes in `out`; Python decodes it.
// decode_images parses every header in parallel, allocates the packed output, then decodes
// every sample in parallel straight into its place.
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <vector>

#include "kernels/image_decode.h"

namespace penstock {
namespace image {

Format detect_format(const uint8_t* d, size_t n) {
  auto starts = [&](const char* magic, size_t len) { return n >= len && !std::memcmp(d, magic, len); };
  if (starts("\xFF\xD8\xFF", 3)) return Format::Jpeg;
  if (starts("\x89PNG\r\n\x1A\n", 8)) return Format::Png;
  if (starts("BM", 2)) return Format::Bmp;
  if (n >= 3 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6' &&
      (d[2] == ' ' || d[2] == '\t' || d[2] == '\n' || d[2] == '\r' || d[2] == '#'))
    return Format::Pnm;
  if (starts("II*\0", 4) || starts("MM\0*", 4)) return Format::Tiff;
  if (n >= 12 && starts("RIFF", 4) && !std::memcmp(d + 8, "WEBP", 4)) return Format::Webp;
  if (starts("\0\0\0\x0CjP  \r\n\x87\n", 12) || starts("\xFF\x4F\xFF\x51", 4)) return Format::Jpeg2000;
  if (starts("GIF87a", 6) || starts("GIF89a", 6)) return Format::Gif;
  return Format::Unknown;
}

const char* format_name(Format f) {
  switch (f) {
    case Format::Jpeg: return "JPEG";
    case Format::Png: return "PNG";
    case Format::Bmp: return "BMP";
    case Format::Pnm: return "PNM";
    case Format::Tiff: return "TIFF";
    case Format::Webp: return "WebP";
    case Format::Jpeg2000: return "JPEG 2000";
    case Format::Gif: return "GIF";
    default: return "unknown";
  }
}

namespace {

constexpr int64_t kMaxSampleBytes = int64_t(1) << 32;  // a corrupt header must not ask for more

ImageInfo read_info(Format f, const uint8_t* d, size_t n) {
  switch (f) {
    case Format::Jpeg: return read_jpeg_info(d, n);
    case Format::Png: return read_png_info(d, n);
    case Format::Bmp: return read_bmp_info(d, n);
    case Format::Pnm: return read_pnm_info(d, n);
    case Format::Tiff: case Format::Webp: case Format::Jpeg2000:
      throw NeedsFallback(format_name(f));
    case Format::Gif:
      throw DecodeError("GIF images are not supported");
    default:
      throw DecodeError("unsupported image format (not JPEG, PNG, BMP, PNM, TIFF, WebP or JPEG 2000)");
  }
}

void decode_region(Format f, const uint8_t* d, size_t n, const DecodeRequest& req, uint8_t* dst) {
  switch (f) {
    case Format::Jpeg: return decode_jpeg(d, n, req, dst);
    case Format::Png: return decode_png(d, n, req, dst);
    case Format::Bmp: return decode_bmp(d, n, req, dst);
    case Format::Pnm: return decode_pnm(d, n, req, dst);
    default: throw DecodeError("no native decoder");
  }
}

struct Plan {
  Format format = Format::Unknown;
  bool fallback = false;
  Orientation orientation;
  DecodeRequest request;
  int64_t out_h = 0, out_w = 0, out_c = 0;
  // Where output pixel (0, 0) starts in display coordinates of the full-size image, and how many
  // full-size pixels one output pixel spans (8/n after DCT scaling by n/8).
  double origin_y = 0, origin_x = 0, step = 1;
};

struct Encoded {
  const uint8_t* data;
  size_t size;
};

Encoded encoded_sample(const BatchView& in, int64_t i) {
  return {static_cast<const uint8_t*>(in.data) + in.offsets[i], size_t(in.volume(i))};
}

// Display size of the full image.
void display_size(const ImageInfo& info, Orientation o, int64_t& h, int64_t& w) {
  h = o.transpose ? info.width : info.height;
  w = o.transpose ? info.height : info.width;
}

// Smallest DCT scale n/8 whose scaled region still covers target (stored orientation).
int pick_scale(const Window& s, int64_t target_h, int64_t target_w) {
  for (int n = 1; n < 8; ++n) {
    int64_t h = (s.y + s.h) * n / 8 + ((s.y + s.h) * n % 8 != 0) - s.y * n / 8;
    int64_t w = (s.x + s.w) * n / 8 + ((s.x + s.w) * n % 8 != 0) - s.x * n / 8;
    if (h >= target_h && w >= target_w) return n;
  }
  return 8;
}

// The rows/columns of the n/8-scaled image that cover a window of the full-size image.
Window scale_window(const Window& s, int n) {
  auto lo = [n](int64_t v) { return v * n / 8; };
  auto hi = [n](int64_t v) { return (v * n + 7) / 8; };
  return {lo(s.y), lo(s.x), hi(s.y + s.h) - lo(s.y), hi(s.x + s.w) - lo(s.x)};
}

Plan plan_sample(const Encoded& e, int output_type, bool adjust_orientation, const int64_t* crop,
                 const int64_t* target, std::optional<int64_t> max_pixels) {
  Plan p;
  if (e.size == 0) throw DecodeError("empty input (0 bytes)");
  p.format = detect_format(e.data, e.size);
  ImageInfo info;
  try {
    info = read_info(p.format, e.data, e.size);
  } catch (const NeedsFallback&) {
    p.fallback = true;
    return p;
  }
  if (info.height < 1 || info.width < 1) throw DecodeError("image has no pixels");
  if (max_pixels && info.height * info.width > *max_pixels)
    throw DecodeError(std::string(format_name(p.format)) + " image of " + std::to_string(info.height) + "x" +
                      std::to_string(info.width) + " = " + std::to_string(info.height * info.width) +
                      " pixels is over the pipeline's limit of max_image_pixels=" + std::to_string(*max_pixels) +
                      " (a decompression bomb, or larger images than expected: raise the limit, or set "
                      "it to None)");
  p.orientation = orientation_from_exif(adjust_orientation ? info.orientation : 1);
  int64_t disp_h, disp_w;
  display_size(info, p.orientation, disp_h, disp_w);

  Window window{0, 0, disp_h, disp_w};
  if (crop) {
    window = {crop[0], crop[1], crop[2], crop[3]};
    if (window.y < 0 || window.x < 0 || window.h < 1 || window.w < 1 || window.y + window.h > disp_h ||
        window.x + window.w > disp_w)
      throw DecodeError("crop window (y=" + std::to_string(window.y) + ", x=" + std::to_string(window.x) +
                        ", h=" + std::to_string(window.h) + ", w=" + std::to_string(window.w) +
                        ") lies outside the " + std::to_string(disp_h) + "x" + std::to_string(disp_w) +
                        " image");
  }
  Window stored = display_to_stored(window, info.height, info.width, p.orientation);

  DecodeRequest& req = p.request;
  req.model = info.model;
  if (p.format == Format::Jpeg) {
    if (output_type == kBGR && info.model == Model::RGB) req.model = Model::BGR;  // libjpeg swaps
    if (output_type == kGray && info.luma_stored) req.model = Model::Gray;    // libjpeg's luma
    if (target && target[0] > 0 && target[1] > 0) {
      int64_t th = p.orientation.transpose ? target[1] : target[0];
      int64_t tw = p.orientation.transpose ? target[0] : target[1];
      req.scale_num = pick_scale(stored, th, tw);
    }
  }
  req.region = scale_window(stored, req.scale_num);
  // The decoded region in full-size stored pixels, mirrored by flips and swapped by transposition.
  const Orientation& o = p.orientation;
  double step = 8.0 / req.scale_num;
  double row0 = req.region.y * step, row1 = (req.region.y + req.region.h) * step;
  double col0 = req.region.x * step, col1 = (req.region.x + req.region.w) * step;
  double first_row = o.flip_rows ? double(info.height) - row1 : row0;
  double first_col = o.flip_cols ? double(info.width) - col1 : col0;
  p.origin_y = o.transpose ? first_col : first_row;
  p.origin_x = o.transpose ? first_row : first_col;
  p.step = step;
  p.out_h = p.orientation.transpose ? req.region.w : req.region.h;
  p.out_w = p.orientation.transpose ? req.region.h : req.region.w;
  p.out_c = output_channels(output_type, info.model);
  if (p.out_h * p.out_w * std::max<int64_t>(p.out_c, model_channels(req.model)) > kMaxSampleBytes)
    throw DecodeError("image too large (" + std::to_string(p.out_h) + "x" + std::to_string(p.out_w) + ")");
  return p;
}

void decode_sample(const Encoded& e, const Plan& p, int output_type, uint8_t* out) {
  const DecodeRequest& req = p.request;
  Orientation o = p.orientation;
  if (!o.transpose && !o.flip_rows && !o.flip_cols && model_is_output(req.model, output_type)) {
    decode_region(p.format, e.data, e.size, req, out);
    return;
  }
  // uninitialized: the decoder writes every byte
  std::unique_ptr<uint8_t[]> stored(new uint8_t[size_t(req.region.h * req.region.w * model_channels(req.model))]);
  decode_region(p.format, e.data, e.size, req, stored.get());
  finish_pixels(stored.get(), req.region.h, req.region.w, req.model, o, output_type, out);
}

// Runs fn for sample i, reporting any failure as SampleError(i).
template <typename F>
void per_sample(int64_t i, F&& fn) {
  try {
    fn();
  } catch (const SampleError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw SampleError(i, "out of memory while decoding the image");
  } catch (const std::exception& ex) {
    throw SampleError(i, ex.what());
  }
}

void check_output_type(int output_type) {
  if (output_type < kRGB || output_type > kAnyData)
    throw std::invalid_argument("output_type must be a DALIImageType code 0..4, got " +
                                std::to_string(output_type));
}

const int64_t* optional_rows(const std::optional<I64Array>& rows, int64_t n, int64_t cols, const char* name) {
  if (!rows) return nullptr;
  if (rows->ndim() != 2 || rows->shape(0) != n || rows->shape(1) != cols)
    throw std::invalid_argument(std::string(name) + " must be an int64 array of shape [N, " +
                                std::to_string(cols) + "]");
  return rows->data();
}

BatchView encoded_batch(const Array& data, const I64Array& shapes, const I64Array& offsets) {
  BatchView in = make_batch_view(data, shapes, offsets, false);
  if (in.elem_size != 1) throw std::invalid_argument("encoded images must be uint8 bytes");
  return in;
}

}  // namespace

void verify_jpegs(ThreadPool& pool, Array data, I64Array shapes, I64Array offsets) {
  BatchView in = encoded_batch(data, shapes, offsets);
  pool.parallel_for(in.num_samples, [&](int64_t i) {
    per_sample(i, [&] {
      Encoded e = encoded_sample(in, i);
      if (detect_format(e.data, e.size) == Format::Jpeg) verify_jpeg(e.data, e.size);
    });
  });
}

std::tuple<I64Array, ArrayOf<bool>> peek_image_shapes(ThreadPool& pool, Array data, I64Array shapes,
                                                      I64Array offsets, int output_type, bool adjust_orientation,
                                                      std::optional<int64_t> max_pixels) {
  check_output_type(output_type);
  BatchView in = encoded_batch(data, shapes, offsets);
  int64_t n = in.num_samples;
  auto out = I64Array::empty({n, 3});
  auto fallback = ArrayOf<bool>::empty({n});
  int64_t* o = out.mutable_data();
  bool* fb = fallback.mutable_data();
  pool.parallel_for(n, [&](int64_t i) {
    per_sample(i, [&] {
      Plan p = plan_sample(encoded_sample(in, i), output_type, adjust_orientation, nullptr, nullptr,
                           max_pixels);
      o[3 * i] = p.out_h, o[3 * i + 1] = p.out_w, o[3 * i + 2] = p.out_c;
      fb[i] = p.fallback;
    });
  });
  return {out, fallback};
}

namespace {

// Where each sample's pixels go in the blocks `into`: places[i] = (block, byte offset, capacity); none
// (an empty list) unless every sample fits its place and every place lies in its block.
std::vector<uint8_t*> placed_samples(const std::vector<Plan>& plans, const std::optional<std::vector<Array>>& into,
                                     const std::optional<I64Array>& places, int64_t n) {
  if (!into || !places) return {};
  const int64_t* rows = optional_rows(places, n, 3, "places");
  std::vector<uint8_t*> dsts(n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t block = rows[3 * i], offset = rows[3 * i + 1], capacity = rows[3 * i + 2];
    if (block < 0 || block >= int64_t(into->size())) return {};
    Array& dst = const_cast<Array&>((*into)[block]);
    const int64_t bytes = plans[i].out_h * plans[i].out_w * plans[i].out_c;
    if (!dst.c_contiguous() || !dst.writeable() || offset < 0 || capacity < bytes ||
        offset + capacity > int64_t(dst.nbytes()))
      return {};
    dsts[i] = static_cast<uint8_t*>(dst.mutable_data()) + offset;
  }
  return dsts;
}

}  // namespace

ArrayTuple decode_images(ThreadPool& pool, Array data, I64Array shapes, I64Array offsets, int output_type,
                         bool adjust_orientation, std::optional<I64Array> crop, std::optional<I64Array> target_hw,
                         bool use_fast_idct, bool return_geometry, bool fancy_upsampling,
                         std::optional<int64_t> max_pixels, bool accept_corrupt_jpeg,
                         std::optional<std::vector<Array>> into, std::optional<I64Array> places) {
  check_output_type(output_type);
  BatchView in = encoded_batch(data, shapes, offsets);
  int64_t n = in.num_samples;
  const int64_t* crops = optional_rows(crop, n, 4, "crop");
  const int64_t* targets = optional_rows(target_hw, n, 2, "target_hw");

  std::vector<Plan> plans(n);
  pool.parallel_for(n, [&](int64_t i) {
    per_sample(i, [&] {
      plans[i] = plan_sample(encoded_sample(in, i), output_type, adjust_orientation,
                             crops ? crops + 4 * i : nullptr, targets ? targets + 2 * i : nullptr,
                             max_pixels);
      plans[i].request.fast_idct = use_fast_idct;
      plans[i].request.fancy_upsampling = fancy_upsampling;
      plans[i].request.accept_corrupt = accept_corrupt_jpeg;
    });
  });

  auto out_shapes = I64Array::empty({n, 3});
  auto out_offsets = I64Array::empty({n});
  auto fallback = ArrayOf<bool>::empty({n});
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const Plan& p = plans[i];
    out_shapes.mutable_data()[3 * i] = p.out_h;
    out_shapes.mutable_data()[3 * i + 1] = p.out_w;
    out_shapes.mutable_data()[3 * i + 2] = p.out_c;
    out_offsets.mutable_data()[i] = total;
    fallback.mutable_data()[i] = p.fallback;
    total += p.out_h * p.out_w * p.out_c;
  }
  // into pinned staging the upload copies nothing on the host (that copy took the mixed decoder's thread
  // 4.9 ms a batch beside ResNet-18 on an H100): each sample at its place in one of the blocks
  std::vector<uint8_t*> dsts = placed_samples(plans, into, places, n);
  Array out = dsts.empty() ? Array::empty('u', 1, {total}, true) : Array::empty('u', 1, {0}, true);
  if (dsts.empty()) {
    uint8_t* base = static_cast<uint8_t*>(out.mutable_data());
    for (int64_t i = 0; i < n; ++i) dsts.push_back(base + out_offsets.data()[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) out_offsets.mutable_data()[i] = places->data()[3 * i + 1];
  }
  pool.parallel_for(n, [&](int64_t i) {
    if (plans[i].fallback) return;
    per_sample(i, [&] { decode_sample(encoded_sample(in, i), plans[i], output_type, dsts[i]); });
  });
  if (!return_geometry) return {out, out_shapes, out_offsets, fallback};
  auto geometry = ArrayOf<double>::empty({n, 3});
  for (int64_t i = 0; i < n; ++i) {
    double* g = geometry.mutable_data() + 3 * i;
    g[0] = plans[i].origin_y;
    g[1] = plans[i].origin_x;
    g[2] = plans[i].step;
  }
  return {out, out_shapes, out_offsets, fallback, geometry};
}

}  // namespace image
}  // namespace penstock
