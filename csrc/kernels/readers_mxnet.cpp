// readers.mxnet: MXNet RecordIO records (read as byte ranges by read_file_ranges) parsed a batch at a
// time into the images' bytes and their labels.
//
// A record is one or more parts, each [magic 0xced7230a][uint32: continuation flag << 29 | length]
// [length bytes, padded to 4]; flag 0 is a whole record, 1 / 2 / 3 its first / middle / last part,
// the parts joined with the magic word between them (the writer cut the payload there). The payload
// starts with MXNet's image header: uint32 flag, float label, uint64 id, uint64 id2; flag > 0 means
// `flag` float labels follow (and the single label is unused); the image's bytes come last.
#include <cstring>
#include <string>
#include <vector>

#include "kernels/readers_mxnet.h"

namespace penstock {
namespace {

constexpr uint32_t kMagic = 0xced7230a;
constexpr int64_t kImageHeader = 24;  // flag, label, id, id2

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The payload pieces (offsets into the range, lengths) of the record in [base, base + size).
std::vector<std::pair<int64_t, int64_t>> record_parts(const uint8_t* base, int64_t size, int64_t i) {
  std::vector<std::pair<int64_t, int64_t>> parts;
  int64_t at = 0;
  for (;;) {
    if (at + 8 > size) throw SampleError(i, "readers.mxnet: truncated record (no room for its header)");
    if (load_u32(base + at) != kMagic) throw SampleError(i, "readers.mxnet: bad record magic (a corrupt file or index)");
    uint32_t word = load_u32(base + at + 4);
    uint32_t flag = word >> 29;
    int64_t length = word & ((1u << 29) - 1);
    if (at + 8 + length > size) throw SampleError(i, "readers.mxnet: truncated record");
    parts.emplace_back(at + 8, length);
    if ((flag == 0 && parts.size() == 1) || flag == 3) return parts;
    if (flag == 0 || (flag == 1) != (parts.size() == 1))
      throw SampleError(i, "readers.mxnet: malformed multi-part record");
    at += 8 + ((length + 3) & ~int64_t(3));
  }
}

}  // namespace

RecordioRecords recordio_records(ThreadPool& pool, ArrayOf<uint8_t> ranges, I64Array starts, I64Array sizes) {
  const int64_t n = starts.shape(0);
  if (sizes.shape(0) != n) throw std::invalid_argument("recordio_records: starts and sizes differ in length");
  const uint8_t* buf = ranges.data();
  for (int64_t i = 0; i < n; ++i)
    if (starts.at(i) < 0 || sizes.at(i) < 0 || starts.at(i) + sizes.at(i) > ranges.size())
      throw std::invalid_argument("recordio_records: ranges outside the buffer");
  std::vector<std::vector<uint8_t>> payloads(n);
  std::vector<int64_t> label_counts(n), image_sizes(n);
  pool.parallel_for(n, [&](int64_t i) {
    const uint8_t* base = buf + starts.at(i);
    auto parts = record_parts(base, sizes.at(i), i);
    std::vector<uint8_t>& payload = payloads[i];
    for (size_t k = 0; k < parts.size(); ++k) {
      if (k) payload.insert(payload.end(), reinterpret_cast<const uint8_t*>(&kMagic),
                            reinterpret_cast<const uint8_t*>(&kMagic) + 4);
      payload.insert(payload.end(), base + parts[k].first, base + parts[k].first + parts[k].second);
    }
    if (int64_t(payload.size()) < kImageHeader) throw SampleError(i, "readers.mxnet: record shorter than its header");
    uint32_t flag = load_u32(payload.data());
    label_counts[i] = flag ? flag : 1;
    int64_t head = kImageHeader + (flag ? 4 * int64_t(flag) : 0);
    if (head > int64_t(payload.size())) throw SampleError(i, "readers.mxnet: record shorter than its labels");
    image_sizes[i] = int64_t(payload.size()) - head;
  });
  int64_t image_total = 0, label_total = 0;
  for (int64_t i = 0; i < n; ++i) {
    image_total += image_sizes[i];
    label_total += label_counts[i];
  }
  auto images = ArrayOf<uint8_t>::empty({image_total}, true);
  auto labels = ArrayOf<float>::empty({label_total});
  auto image_sizes_out = I64Array::empty({n}), label_counts_out = I64Array::empty({n});
  uint8_t* img = images.mutable_data();
  float* lab = labels.mutable_data();
  int64_t ia = 0, la = 0;
  for (int64_t i = 0; i < n; ++i) {
    const std::vector<uint8_t>& p = payloads[i];
    uint32_t flag = load_u32(p.data());
    if (flag) std::memcpy(lab + la, p.data() + kImageHeader, 4 * label_counts[i]);
    else std::memcpy(lab + la, p.data() + 4, 4);
    if (image_sizes[i]) std::memcpy(img + ia, p.data() + p.size() - image_sizes[i], image_sizes[i]);  // none: img may be null
    image_sizes_out.mutable_data()[i] = image_sizes[i];
    label_counts_out.mutable_data()[i] = label_counts[i];
    ia += image_sizes[i];
    la += label_counts[i];
  }
  return {images, image_sizes_out, labels, label_counts_out};
}

}  // namespace penstock
