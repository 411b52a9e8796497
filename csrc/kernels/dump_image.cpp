// dump_image: each uint8 HWC sample written as a plain (ASCII, P3) PPM file, a batch in parallel.
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/dump_image.h"

namespace penstock {
// paths[i] gets sample i: "P3\n<W> <H>\n255\n", then one line per row, each value followed by a space.
void write_ppm(ThreadPool& pool, Array src, I64Array shapes, I64Array offsets, std::vector<std::string> paths) {
  BatchView in = make_batch_view(src, shapes, offsets, false);
  if (in.ndim != 3 || in.elem_size != 1) throw std::invalid_argument("write_ppm: samples must be uint8 HWC");
  if (int64_t(paths.size()) != in.num_samples) throw std::invalid_argument("write_ppm: one path per sample");
  pool.parallel_for(in.num_samples, [&](int64_t i) {
    const int64_t h = in.shape(i)[0], w = in.shape(i)[1], c = in.shape(i)[2];
    const uint8_t* p = in.sample<uint8_t>(i);
    std::string text = "P3\n" + std::to_string(w) + " " + std::to_string(h) + "\n255\n";
    text.reserve(text.size() + h * w * c * 4 + h);
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t k = 0; k < w * c; ++k) {
        text += std::to_string(p[y * w * c + k]);
        text += ' ';
      }
      text += '\n';
    }
    FILE* f = std::fopen(paths[i].c_str(), "wb");
    if (!f) throw SampleError(i, "dump_image: cannot open '" + paths[i] + "' for writing");
    size_t wrote = std::fwrite(text.data(), 1, text.size(), f);
    bool ok = std::fclose(f) == 0 && wrote == text.size();
    if (!ok) throw SampleError(i, "dump_image: cannot write '" + paths[i] + "'");
  });
}

}  // namespace penstock
