// JPEG through libjpeg-turbo: header + EXIF orientation, and region decoding with DCT-domain
// downscaling (scale_num/8), horizontal cropping at iMCU granularity (jpeg_crop_scanline; the
// remainder is cut here), and the rows above and below the window skipped: entropy-decoded only,
// so that a corrupt scan is found wherever the window lies (accepting corruption, the decode
// stops below the window).
//
// libjpeg reports errors by calling error_exit, which must not return: ours longjmps back to
// guarded(), which throws DecodeError. Frames between setjmp and longjmp hold no C++ objects.
#include <csetjmp>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include <jpeglib.h>
#include <jerror.h>

#include "kernels/image_decode.h"

namespace penstock {
namespace image {
namespace {

struct ErrorManager {
  jpeg_error_mgr pub;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool strict = false;   // corrupt-data warnings are errors (see on_message)
  bool corrupt = false;  // the error is such a warning
};

[[noreturn]] void on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  cinfo->err->format_message(cinfo, err->message);
  longjmp(err->jump, 1);
}

// Warnings (level -1) are never printed. Running out of data is always an error: libjpeg would
// pad a truncated file with grey. libjpeg-turbo decodes around corrupt data (a scan cut short by
// a marker, a bad Huffman code, a missing restart marker, bytes it cannot place) by inventing
// coefficients, and says so only in a warning: when strict, every warning is an error but an
// unknown JFIF revision, which says nothing of the pixels. Otherwise they are tolerated, as
// DALI's CPU decoder, PIL and OpenCV do.
void on_message(j_common_ptr cinfo, int level) {
  if (level != -1) return;
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  int code = cinfo->err->msg_code;
  if (code == JWRN_JPEG_EOF) {
    std::snprintf(err->message, sizeof(err->message), "truncated JPEG data");
    longjmp(err->jump, 1);
  }
  if (err->strict && code != JWRN_JFIF_MAJOR) {
    cinfo->err->format_message(cinfo, err->message);
    err->corrupt = true;
    longjmp(err->jump, 1);
  }
  cinfo->err->num_warnings++;
}

constexpr long kMaxDecoderMemory = 1L << 31;

// One decompressor; owns everything that has a destructor.
struct Session {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  bool created = false;
  std::vector<uint8_t> row;
  ~Session() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
};

// Runs body (which must keep no C++ objects on its own stack frame) under libjpeg's error
// handler.
template <typename F>
void guarded(Session& s, F&& body) {
  if (setjmp(s.err.jump))
    throw DecodeError(std::string("invalid JPEG: ") + s.err.message +
                      (s.err.corrupt ? " (decoding it would give partly made-up pixels; the decoders' "
                                       "accept_corrupt_jpeg=True decodes such files anyway, as DALI does)"
                                     : ""));
  body();
}

// Inside guarded(): creates the decompressor and reads the header, refusing one that no file of
// `size` bytes can hold. Returns whether libjpeg reads the samples (8-bit ones).
bool read_header(Session& s, const uint8_t* data, size_t size, bool save_app1, bool strict) {
  std::memset(&s.cinfo, 0, sizeof(s.cinfo));
  s.cinfo.err = jpeg_std_error(&s.err.pub);
  s.err.strict = strict;
  s.err.pub.error_exit = on_error;
  s.err.pub.emit_message = on_message;
  jpeg_create_decompress(&s.cinfo);
  s.created = true;
  // Bounds libjpeg's own buffers (a progressive file's whole-image coefficients), so a
  // corrupt header claiming a huge image fails instead of exhausting memory.
  s.cinfo.mem->max_memory_to_use = kMaxDecoderMemory;
  jpeg_mem_src(&s.cinfo, data, static_cast<unsigned long>(size));
  if (save_app1) jpeg_save_markers(&s.cinfo, JPEG_APP0 + 1, 0xFFFF);
  jpeg_read_header(&s.cinfo, TRUE);
  // Huffman coding spends at least one bit on every 8x8 luma block, so a header that claims
  // more blocks than the file has bits is corrupt (arithmetic coding has no such bound).
  uint64_t blocks = uint64_t((s.cinfo.image_width + 7) / 8) * ((s.cinfo.image_height + 7) / 8);
  if (!s.cinfo.arith_code && blocks > uint64_t(size) * 8)
    throw DecodeError("invalid JPEG: " + std::to_string(size) + " bytes cannot hold a " +
                      std::to_string(s.cinfo.image_width) + "x" + std::to_string(s.cinfo.image_height) +
                      " image (corrupt header or truncated file)");
  return s.cinfo.data_precision == 8;
}

// Inside guarded(): read_header, refusing samples libjpeg does not read.
void open(Session& s, const uint8_t* data, size_t size, bool save_app1, bool strict) {
  if (!read_header(s, data, size, save_app1, strict))
    throw DecodeError("JPEG with " + std::to_string(s.cinfo.data_precision) +
                      "-bit samples is not supported (8-bit only)");
}

// Inside guarded(), decompressing: the `below` rows left, entropy-decoded without IDCT but the
// last (which must be read for libjpeg to go on to the end marker: a skip to the very end stops
// without reading on), then the end marker, where libjpeg notices corruption that put a scan out
// of step (bytes left over after it).
void read_through(Session& s, int64_t below) {
  jpeg_decompress_struct& c = s.cinfo;
  if (below > 0) {
    s.row.resize(size_t(c.output_width) * c.output_components);
    JSAMPROW spare = s.row.data();
    // The merged upsampler makes rows in pairs: skipping from the second row of a pair,
    // libjpeg-turbo (2.1) decodes a row group too many and runs past the end of the scan (a
    // valid file would be refused). Read that row first.
    if (below > 1 && c.output_scanline % c.rec_outbuf_height != 0) {
      if (jpeg_read_scanlines(&c, &spare, 1) != 1) throw DecodeError("truncated JPEG data");
      --below;
    }
    if (below > 1 && jpeg_skip_scanlines(&c, JDIMENSION(below - 1)) != JDIMENSION(below - 1))
      throw DecodeError("truncated JPEG data");
    if (jpeg_read_scanlines(&c, &spare, 1) != 1) throw DecodeError("truncated JPEG data");
  }
  jpeg_finish_decompress(&c);
}

bool is_cmyk(const jpeg_decompress_struct& c) {
  return c.jpeg_color_space == JCS_CMYK || c.jpeg_color_space == JCS_YCCK;
}

int orientation_of(const jpeg_decompress_struct& c) {
  static const uint8_t kExif[6] = {'E', 'x', 'i', 'f', 0, 0};
  for (jpeg_saved_marker_ptr m = c.marker_list; m; m = m->next)
    if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 && !std::memcmp(m->data, kExif, 6))
      return exif_orientation(m->data + 6, m->data_length - 6);
  return 1;
}

// JPEGs whose entropy-coded data a crop read to the end marker without a complaint, by a hash of
// their bytes: a later crop of the same bytes (the next epoch's) stops below its window, so the
// check costs a file one read past a window per process, not one per epoch. Open addressing over
// 64-bit hashes (0 marks an empty slot), grown to at most kMaxSlots (64 MB: 4M files kept). It
// never waits for its lock: held by another thread (or by a parent's thread when this process was
// forked), a file is read through again and not remembered. Lookups share it: a mixed decoder's
// read-through looks a batch's files up on all the pipeline's threads at once, every epoch, and a
// lookup refused by another one would read its file through again (half a decode).
class VerifiedJpegs {
 public:
  static VerifiedJpegs& instance() {
    static VerifiedJpegs verified;
    return verified;
  }
  bool contains(uint64_t key) {
    std::shared_lock<std::shared_mutex> lock(mutex_, std::try_to_lock);
    return lock.owns_lock() && !slots_.empty() && slots_[find(key)] == key;
  }
  void insert(uint64_t key) {
    std::unique_lock<std::shared_mutex> lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return;
    if (2 * (used_ + 1) > slots_.size()) {
      if (slots_.size() >= kMaxSlots) return;  // full: later files pay the read each time
      std::vector<uint64_t> old(std::max<size_t>(kMinSlots, 2 * slots_.size()), 0);
      old.swap(slots_);
      for (uint64_t k : old)
        if (k) slots_[find(k)] = k;
    }
    size_t i = find(key);
    if (slots_[i] != key) slots_[i] = key, ++used_;
  }

 private:
  static constexpr size_t kMinSlots = 1 << 12, kMaxSlots = 1 << 23;
  size_t find(uint64_t key) const {  // the key's slot, or the empty one where it would go
    size_t mask = slots_.size() - 1, i = size_t(key) & mask;
    while (slots_[i] && slots_[i] != key) i = (i + 1) & mask;
    return i;
  }
  std::shared_mutex mutex_;
  std::vector<uint64_t> slots_;
  size_t used_ = 0;
};

// A 64-bit hash of a file's bytes and length (never 0): four multiply-xor lanes over 8-byte
// words, mixed at the end; ~10 bytes per cycle, a few microseconds for a photograph.
uint64_t content_hash(const uint8_t* data, size_t size) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t lane[4] = {size, kMul, ~uint64_t(size), 0x632BE59BD9B4E019ull};
  size_t i = 0;
  for (; i + 32 <= size; i += 32)
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, data + i + 8 * k, 8);
      lane[k] = (lane[k] ^ w) * kMul;
      lane[k] ^= lane[k] >> 29;
    }
  uint64_t h = size;
  for (; i < size; ++i) h = (h ^ data[i]) * kMul;
  for (int k = 0; k < 4; ++k) h = ((h ^ lane[k]) * kMul) ^ (h >> 31);
  h ^= h >> 33, h *= 0xFF51AFD7ED558CCDull, h ^= h >> 33;
  return h ? h : 1;
}

// Output pixels decoded beyond a crop window's right edge (covers 4x horizontal subsampling).
constexpr int64_t kChromaMargin = 8;

inline uint8_t mul_div255(int a, int b) {
  int t = a * b + 128;
  return uint8_t((t + (t >> 8)) >> 8);
}

// CMYK (as libjpeg delivers it, also for YCCK) to RGB or BGR. Adobe writers store the
// channels inverted, which the APP14 marker tells.
void cmyk_row(const uint8_t* s, int64_t n, bool adobe_inverted, bool bgr, uint8_t* d) {
  for (int64_t i = 0; i < n; ++i, s += 4, d += 3) {
    int c = s[0], m = s[1], y = s[2], k = s[3];
    if (!adobe_inverted) c = 255 - c, m = 255 - m, y = 255 - y, k = 255 - k;
    uint8_t r = mul_div255(c, k), g = mul_div255(m, k), b = mul_div255(y, k);
    d[0] = bgr ? b : r, d[1] = g, d[2] = bgr ? r : b;
  }
}

}  // namespace

ImageInfo read_jpeg_info(const uint8_t* data, size_t size) {
  Session s;
  ImageInfo info;
  guarded(s, [&] {
    open(s, data, size, true, false);  // the header only: no pixels to invent
    info.height = s.cinfo.image_height;
    info.width = s.cinfo.image_width;
    info.model = s.cinfo.jpeg_color_space == JCS_GRAYSCALE ? Model::Gray : Model::RGB;
    info.luma_stored = info.model == Model::RGB && !is_cmyk(s.cinfo);
    info.orientation = orientation_of(s.cinfo);
  });
  return info;
}

void decode_jpeg(const uint8_t* data, size_t size, const DecodeRequest& req, uint8_t* dst) {
  Session s;
  guarded(s, [&] {
    open(s, data, size, false, !req.accept_corrupt);
    jpeg_decompress_struct& c = s.cinfo;
    bool cmyk = is_cmyk(c);
    bool bgr = req.model == Model::BGR;
    if (c.jpeg_color_space == JCS_GRAYSCALE) {
      if (req.model != Model::Gray) throw DecodeError("grayscale JPEG decoded as colour");
      c.out_color_space = JCS_GRAYSCALE;
    } else if (req.model == Model::Gray) {
      if (cmyk) throw DecodeError("CMYK JPEG decoded as grayscale");
      c.out_color_space = JCS_GRAYSCALE;  // libjpeg's own luma (for YCbCr, the stored Y), as DALI's GRAY
    } else {
      c.out_color_space = cmyk ? JCS_CMYK : bgr ? JCS_EXT_BGR : JCS_RGB;
    }
    c.scale_num = req.scale_num;
    c.scale_denom = 8;
    c.dct_method = req.fast_idct ? JDCT_IFAST : JDCT_ISLOW;
    c.do_fancy_upsampling = req.fancy_upsampling ? TRUE : FALSE;
    jpeg_start_decompress(&c);

    const Window& w = req.region;
    if (w.y < 0 || w.x < 0 || w.h < 1 || w.w < 1 || w.y + w.h > c.output_height ||
        w.x + w.w > c.output_width)
      throw DecodeError("JPEG region outside the decoded image");
    // Decode a few more columns than asked on both sides: fancy upsampling at the edge of a
    // cropped scanline replicates the edge chroma instead of reading its neighbour.
    int64_t margin_right = std::min<int64_t>(kChromaMargin, c.output_width - (w.x + w.w));
    JDIMENSION x0 = JDIMENSION(w.x > 0 ? w.x - 1 : 0);
    JDIMENSION width = JDIMENSION(w.x + w.w + margin_right - x0);
    if (x0 > 0 || width < c.output_width) jpeg_crop_scanline(&c, &x0, &width);  // widens to iMCUs
    int64_t skip_cols = w.x - int64_t(x0);
    if (w.y > 0 && jpeg_skip_scanlines(&c, JDIMENSION(w.y)) != JDIMENSION(w.y))
      throw DecodeError("truncated JPEG data");

    int comps = c.output_components;
    int out_c = cmyk ? 3 : comps;
    bool direct = !cmyk && skip_cols == 0 && int64_t(c.output_width) == w.w;
    if (!direct) s.row.resize(size_t(c.output_width) * comps);
    for (int64_t r = 0; r < w.h; ++r) {
      uint8_t* out_row = dst + r * w.w * out_c;
      JSAMPROW target = direct ? out_row : s.row.data();
      if (jpeg_read_scanlines(&c, &target, 1) != 1) throw DecodeError("truncated JPEG data");
      if (direct) continue;
      const uint8_t* src = s.row.data() + skip_cols * comps;
      if (cmyk) cmyk_row(src, w.w, c.saw_Adobe_marker, bgr, out_row);
      else std::memcpy(out_row, src, size_t(w.w) * comps);
    }
    // Through to the end marker, so that corruption libjpeg only notices there is reported for a
    // window too, wherever it lies (read_through). Tolerating corruption, or for bytes read
    // through before, nothing below the window is read.
    int64_t below = int64_t(c.output_height) - int64_t(c.output_scanline);
    uint64_t key = below > 0 && !req.accept_corrupt ? content_hash(data, size) : 0;
    if (below > 0 && (req.accept_corrupt || VerifiedJpegs::instance().contains(key))) {
      jpeg_abort_decompress(&c);
      return;
    }
    read_through(s, below);
    if (key) VerifiedJpegs::instance().insert(key);
  });
}

void verify_jpeg(const uint8_t* data, size_t size) {
  const uint64_t key = content_hash(data, size);
  if (VerifiedJpegs::instance().contains(key)) return;
  Session s;
  bool read = false;
  guarded(s, [&] {
    if (!read_header(s, data, size, false, true)) return;  // samples libjpeg does not read: not its to judge
    s.cinfo.scale_num = 1;  // the smallest rows: only the last one is made
    s.cinfo.scale_denom = 8;
    jpeg_start_decompress(&s.cinfo);
    read_through(s, int64_t(s.cinfo.output_height));
    read = true;
  });
  if (read) VerifiedJpegs::instance().insert(key);
}

}  // namespace image
}  // namespace penstock
