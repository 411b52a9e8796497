// JPEG compression artefacts: each frame is encoded with libjpeg at the sample's quality
// (baseline, 4:2:0 chroma for colour, libjpeg's standard tables) and decoded back.
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <jpeglib.h>

#include "kernels/jpeg_compression_distortion.h"

namespace penstock {
namespace {

// libjpeg reports errors through error_exit, which must not return: jump back to the caller.
struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_jpeg_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Plain C-style code between setjmp and longjmp (no objects with destructors). Returns an
// empty string on success, else libjpeg's message.
std::string roundtrip(const uint8_t* in, uint8_t* out, int h, int w, int c, int quality) {
  jpeg_compress_struct enc;
  jpeg_decompress_struct dec;
  JpegError err;
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  bool enc_made = false, dec_made = false;
  enc.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = on_jpeg_error;
  if (setjmp(err.jump)) {
    if (enc_made) jpeg_destroy_compress(&enc);
    if (dec_made) jpeg_destroy_decompress(&dec);
    std::free(buf);
    return err.message;
  }
  jpeg_create_compress(&enc);
  enc_made = true;
  jpeg_mem_dest(&enc, &buf, &size);
  enc.image_width = JDIMENSION(w);
  enc.image_height = JDIMENSION(h);
  enc.input_components = c;
  enc.in_color_space = c == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(&enc);
  jpeg_set_quality(&enc, quality, TRUE);
  jpeg_start_compress(&enc, TRUE);
  while (enc.next_scanline < enc.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(in) + size_t(enc.next_scanline) * w * c;
    jpeg_write_scanlines(&enc, &row, 1);
  }
  jpeg_finish_compress(&enc);
  jpeg_destroy_compress(&enc);
  enc_made = false;

  dec.err = &err.mgr;
  jpeg_create_decompress(&dec);
  dec_made = true;
  jpeg_mem_src(&dec, buf, size);
  jpeg_read_header(&dec, TRUE);
  dec.out_color_space = c == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_start_decompress(&dec);
  while (dec.output_scanline < dec.output_height) {
    JSAMPROW row = out + size_t(dec.output_scanline) * w * c;
    jpeg_read_scanlines(&dec, &row, 1);
  }
  jpeg_finish_decompress(&dec);
  jpeg_destroy_decompress(&dec);
  std::free(buf);
  return std::string();
}

}  // namespace

// Samples (frames, H, W, C) uint8 with C = 1 or 3; qualities [N] in 1..100.
void jpeg_compression_distortion(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, Array dst,
                                 I64Array dst_offsets, I64Array qualities) {
  // plain Array: a converting ArrayOf would write the output into a temporary copy
  if (!src.holds<uint8_t>() || !dst.holds<uint8_t>())
    throw std::invalid_argument("jpeg_compression_distortion: buffers must be uint8");
  BatchView in = make_batch_view(src, shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, shapes, dst_offsets, true);
  int64_t n = in.num_samples;
  if (in.ndim != 4) throw std::invalid_argument("jpeg_compression_distortion: samples must be (frames, H, W, C)");
  if (qualities.ndim() != 1 || qualities.shape(0) != n)
    throw std::invalid_argument("jpeg_compression_distortion: qualities must be [N]");
  const int64_t* q = qualities.data();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t* sh = in.shape(i);
    if (sh[3] != 1 && sh[3] != 3)
      throw SampleError(i, "jpeg_compression_distortion: expected 1 or 3 channels, got " + std::to_string(sh[3]));
    if (sh[1] > JPEG_MAX_DIMENSION || sh[2] > JPEG_MAX_DIMENSION)
      throw SampleError(i, "jpeg_compression_distortion: image too large for JPEG");
    if (q[i] < 1 || q[i] > 100)
      throw SampleError(i, "jpeg_compression_distortion: quality must be in [1, 100], got " + std::to_string(q[i]));
  }
  pool.parallel_for(n, [&](int64_t i) {
    const int64_t *sh = in.shape(i), F = sh[0], H = sh[1], W = sh[2], C = sh[3];
    if (H == 0 || W == 0) return;
    for (int64_t f = 0; f < F; ++f) {
      std::string error = roundtrip(in.sample<uint8_t>(i) + f * H * W * C,
                                    out.sample<uint8_t>(i) + f * H * W * C, int(H), int(W), int(C),
                                    int(q[i]));
      if (!error.empty()) throw SampleError(i, "jpeg_compression_distortion: " + error);
    }
  });
}

}  // namespace penstock
