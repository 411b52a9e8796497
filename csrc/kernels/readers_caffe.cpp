// readers.caffe and readers.caffe2: the records of Caffe and Caffe2 LMDB databases, parsed from
// protobuf's wire format (kernels/protobuf_wire.h) a batch at a time, the samples in parallel.
//
// caffe.Datum := 1 channels, 2 height, 3 width (int32), 4 data (bytes: the image, encoded or raw
// CHW as stored), 5 label (int32), 6 float_data (float*), 7 encoded (bool). The reader outputs
// `data` and `label` as they are.
//
// caffe2.TensorProtos := 1 TensorProto*; TensorProto := 1 dims (int64*), 2 data_type (enum, FLOAT by
// default), 3 float_data (float*), 4 int32_data (int32*; also holds the small integer types),
// 5 byte_data (bytes), 6 string_data (bytes*), 9 double_data (double*), 10 int64_data (int64*).
// A record holds, in order: the image (STRING: an encoded image, the first string; BYTE: raw
// pixels, dims (H, W[, C])), the label(s) by label_type, `additional_inputs` tensors (FLOAT,
// INT32 or INT64, flattened) and the bounding box (4 INT32). Tensors after those are not read.
#include <array>
#include <string>
#include <vector>

#include "kernels/protobuf_wire.h"
#include "kernels/readers_caffe.h"

namespace penstock {
namespace {

// Caffe2's TensorProto.DataType values the readers take.
enum ProtoType { kFloat = 1, kInt32 = 2, kByte = 3, kString = 4, kInt64 = 10 };
// readers.caffe2's label_type values.
enum LabelType { kSingle = 0, kSparse = 1, kDense = 2, kWeightedSparse = 3, kNoLabel = 4 };

struct Bytes {
  const uint8_t* data = nullptr;
  int64_t size = 0;
  bool present = false;
};

Bytes bytes_of(WireReader& r) {
  WireReader s = r.sub();
  return {s.p, int64_t(s.end - s.p), r.ok};
}

struct Datum {
  Bytes data;
  bool has_label = false;
  int32_t label = 0;
};

// The fields readers.caffe outputs; a field given twice takes its last value, as protobuf's does.
bool parse_datum(const uint8_t* p, int64_t n, Datum& d) {
  WireReader r{p, p + n};
  int field, wire;
  while (r.more() && r.tag(field, wire)) {
    if (field == 4 && wire == 2) {
      d.data = bytes_of(r);
    } else if (field == 5 && wire == 0) {
      d.label = int32_t(r.varint());
      d.has_label = true;
    } else {
      r.skip(wire);
    }
  }
  return r.ok;
}

struct TensorProto {
  std::vector<int64_t> dims;
  int64_t data_type = kFloat;
  std::vector<float> floats;
  std::vector<int32_t> int32s;
  std::vector<int64_t> int64s;
  Bytes byte_data;
  std::vector<Bytes> strings;
};

bool parse_tensor(WireReader r, TensorProto& t) {
  int field, wire;
  std::vector<double> doubles;  // parsed (to check the record), never output
  while (r.more() && r.tag(field, wire)) {
    switch (field) {
      case 1: read_repeated<0>(r, wire, t.dims); break;
      case 2: if (wire == 0) t.data_type = int64_t(r.varint()); else r.skip(wire); break;
      case 3: read_repeated<5>(r, wire, t.floats); break;
      case 4: read_repeated<0>(r, wire, t.int32s); break;
      case 5: if (wire == 2) t.byte_data = bytes_of(r); else r.skip(wire); break;
      case 6: if (wire == 2) t.strings.push_back(bytes_of(r)); else r.skip(wire); break;
      case 9: read_repeated<1>(r, wire, doubles); break;
      case 10: read_repeated<0>(r, wire, t.int64s); break;
      default: r.skip(wire);
    }
  }
  return r.ok;
}

bool parse_protos(const uint8_t* p, int64_t n, std::vector<TensorProto>& protos) {
  WireReader r{p, p + n};
  int field, wire;
  while (r.more() && r.tag(field, wire)) {
    if (field == 1 && wire == 2) {
      protos.emplace_back();
      if (!parse_tensor(r.sub(), protos.back())) return false;
    } else {
      r.skip(wire);
    }
  }
  return r.ok;
}

// One output tensor of one sample.
struct Out {
  std::vector<uint8_t> bytes;
  std::array<int64_t, 3> shape{0, 0, 0};
  int64_t rank = 1;
  uint8_t type = kCaffe2U8;

  template <typename T>
  void set(const T* values, int64_t count, uint8_t element_type) {
    bytes.assign(reinterpret_cast<const uint8_t*>(values), reinterpret_cast<const uint8_t*>(values + count));
    shape = {count, 0, 0};
    rank = 1;
    type = element_type;
  }
};

std::string type_name(int64_t t) {
  switch (t) {
    case kFloat: return "FLOAT";
    case kInt32: return "INT32";
    case kByte: return "BYTE";
    case kString: return "STRING";
    case kInt64: return "INT64";
    default: return "data type " + std::to_string(t);
  }
}

void parse_image(const TensorProto& t, Out& out, int64_t i) {
  if (t.data_type == kString) {
    if (t.strings.empty()) throw SampleError(i, "its image tensor (STRING) holds no string");
    out.set(t.strings[0].data, t.strings[0].size, kCaffe2U8);
    return;
  }
  if (t.data_type != kByte)
    throw SampleError(i, "its image tensor has type " + type_name(t.data_type) +
                             "; an image is STRING (encoded) or BYTE (raw pixels)");
  if (t.dims.size() < 2)
    throw SampleError(i, "its raw image tensor has " + std::to_string(t.dims.size()) +
                             " dims; it needs (H, W) or (H, W, C)");
  int64_t h = t.dims[0], w = t.dims[1], c = t.dims.size() == 3 ? t.dims[2] : 1;
  if (h < 0 || w < 0 || c < 0 || t.byte_data.size != h * w * c)
    throw SampleError(i, "Image data size mismatch: " + std::to_string(t.byte_data.size) + " (expected: " +
                             std::to_string(h * w * c) + ")");
  out.set(t.byte_data.data, t.byte_data.size, kCaffe2U8);
  out.shape = {h, w, c};
  out.rank = 3;
}

// A scalar-or-list label tensor's values (INT32 or FLOAT) as an output.
void parse_values(const TensorProto& t, Out& out, int64_t i, const char* what) {
  if (t.data_type == kInt32) out.set(t.int32s.data(), int64_t(t.int32s.size()), kCaffe2I32);
  else if (t.data_type == kFloat) out.set(t.floats.data(), int64_t(t.floats.size()), kCaffe2F32);
  else throw SampleError(i, std::string("Unsupported label data type ") + type_name(t.data_type) + " of its " + what +
                                " (INT32 or FLOAT)");
}

std::vector<int32_t> label_indices(const TensorProto& t, int64_t num_labels, int64_t i) {
  if (t.data_type != kInt32)
    throw SampleError(i, "its sparse label indices have type " + type_name(t.data_type) + ", not INT32");
  for (int32_t idx : t.int32s)
    if (idx < 0 || idx >= num_labels)
      throw SampleError(i, "Label index out of bounds: " + std::to_string(idx) +
                               " (num_labels: " + std::to_string(num_labels) + ")");
  return t.int32s;
}

// The label(s) from protos[at...]; returns how many tensors they took.
int64_t parse_label(const std::vector<TensorProto>& protos, size_t at, int64_t label_type, int64_t num_labels,
                    Out& out, int64_t i) {
  auto need = [&](size_t count) {
    if (protos.size() < at + count)
      throw SampleError(i, "it has " + std::to_string(protos.size()) + " tensors; its label needs tensor " +
                               std::to_string(at + count));
  };
  need(1);
  const TensorProto& t = protos[at];
  if (label_type == kSingle) {
    parse_values(t, out, i, "label");
    if (out.shape[0] != 1)
      throw SampleError(i, "its single label tensor holds " + std::to_string(out.shape[0]) + " values, not 1");
    return 1;
  }
  if (label_type == kDense) {
    parse_values(t, out, i, "dense labels");
    return 1;
  }
  std::vector<int32_t> indices = label_indices(t, num_labels, i);
  if (label_type == kSparse) {  // 1 at each index
    std::vector<int32_t> dense(num_labels, 0);
    for (int32_t idx : indices) dense[idx] = 1;
    out.set(dense.data(), num_labels, kCaffe2I32);
    return 1;
  }
  need(2);  // kWeightedSparse: each index's weight, from the next tensor
  const TensorProto& weights = protos[at + 1];
  if (weights.data_type != kFloat || weights.floats.size() != indices.size())
    throw SampleError(i, "its label weights must be a FLOAT tensor of one weight per index (" +
                             std::to_string(indices.size()) + ")");
  std::vector<float> dense(num_labels, 0.f);
  for (size_t k = 0; k < indices.size(); ++k) dense[indices[k]] = weights.floats[k];
  out.set(dense.data(), num_labels, kCaffe2F32);
  return 2;
}

void parse_additional(const TensorProto& t, Out& out, int64_t i) {
  if (t.data_type == kFloat) out.set(t.floats.data(), int64_t(t.floats.size()), kCaffe2F32);
  else if (t.data_type == kInt32) out.set(t.int32s.data(), int64_t(t.int32s.size()), kCaffe2I32);
  else if (t.data_type == kInt64) out.set(t.int64s.data(), int64_t(t.int64s.size()), kCaffe2I64);
  else throw SampleError(i, "Unsupported data type in additional proto: " + type_name(t.data_type) +
                                " (FLOAT, INT32 or INT64)");
}

void check_records(ArrayOf<uint8_t>& records, I64Array& starts, I64Array& sizes, const char* what) {
  if (sizes.shape(0) != starts.shape(0)) throw std::invalid_argument(std::string(what) + ": starts and sizes differ");
  for (int64_t i = 0; i < starts.shape(0); ++i)
    if (starts.at(i) < 0 || sizes.at(i) < 0 || starts.at(i) + sizes.at(i) > records.size())
      throw std::invalid_argument(std::string(what) + ": a record lies outside the buffer");
}

// The outputs' samples packed: per output (bytes, shapes [N, 3], ranks [N], types [N]).
ArrayTuple pack(const std::vector<std::vector<Out>>& outs, int64_t n_outputs) {
  const int64_t n = int64_t(outs.size());
  ArrayTuple result;
  for (int64_t k = 0; k < n_outputs; ++k) {
    int64_t total = 0;
    for (int64_t i = 0; i < n; ++i) total += int64_t(outs[i][k].bytes.size());
    auto bytes = ArrayOf<uint8_t>::empty({total}, true);
    auto shapes = I64Array::empty({n, 3});
    auto ranks = I64Array::empty({n});
    auto types = ArrayOf<uint8_t>::empty({n});
    uint8_t* b = bytes.mutable_data();
    for (int64_t i = 0; i < n; ++i) {
      const Out& o = outs[i][k];
      if (!o.bytes.empty()) std::memcpy(b, o.bytes.data(), o.bytes.size());
      b += o.bytes.size();
      for (int d = 0; d < 3; ++d) shapes.mutable_data()[3 * i + d] = o.shape[d];
      ranks.mutable_data()[i] = o.rank;
      types.mutable_data()[i] = o.type;
    }
    result.insert(result.end(), {bytes, shapes, ranks, types});
  }
  return result;
}

}  // namespace

ArrayTuple caffe_datums(ThreadPool& pool, ArrayOf<uint8_t> records, I64Array starts, I64Array sizes) {
  check_records(records, starts, sizes, "caffe_datums");
  const int64_t n = starts.shape(0);
  std::vector<Datum> datums(n);
  pool.parallel_for(n, [&](int64_t i) {
    if (!parse_datum(records.data() + starts.at(i), sizes.at(i), datums[i]))
      throw SampleError(i, "raw data length: " + std::to_string(sizes.at(i)) + " bytes");
  });
  int64_t image_total = 0, label_total = 0;
  for (const Datum& d : datums) {
    image_total += d.data.size;
    label_total += d.has_label;
  }
  auto images = ArrayOf<uint8_t>::empty({image_total}, true);
  auto labels = ArrayOf<int32_t>::empty({label_total});
  auto image_sizes = I64Array::empty({n}), label_counts = I64Array::empty({n});
  uint8_t* img = images.mutable_data();
  int32_t* lab = labels.mutable_data();
  for (int64_t i = 0; i < n; ++i) {
    const Datum& d = datums[i];
    if (d.data.size) std::memcpy(img, d.data.data, d.data.size);
    img += d.data.size;
    if (d.has_label) *lab++ = d.label;
    image_sizes.mutable_data()[i] = d.data.size;
    label_counts.mutable_data()[i] = d.has_label;
  }
  return {images, image_sizes, labels, label_counts};
}

ArrayTuple caffe2_protos(ThreadPool& pool, ArrayOf<uint8_t> records, I64Array starts, I64Array sizes, bool image,
                         int64_t label_type, int64_t num_labels, int64_t additional_inputs, bool bbox) {
  check_records(records, starts, sizes, "caffe2_protos");
  if (label_type < kSingle || label_type > kNoLabel || additional_inputs < 0 || num_labels < 0)
    throw std::invalid_argument("caffe2_protos: label_type, num_labels or additional_inputs out of range");
  const int64_t n = starts.shape(0);
  const int64_t n_outputs = image + (label_type != kNoLabel) + additional_inputs + bbox;
  std::vector<std::vector<Out>> outs(n, std::vector<Out>(n_outputs));
  pool.parallel_for(n, [&](int64_t i) {
    std::vector<TensorProto> protos;
    if (!parse_protos(records.data() + starts.at(i), sizes.at(i), protos))
      throw SampleError(i, "it is not a Caffe2 TensorProtos record (raw data length: " +
                               std::to_string(sizes.at(i)) + " bytes)");
    size_t at = 0;
    int64_t k = 0;
    auto next = [&](const char* what) -> const TensorProto& {
      if (at >= protos.size())
        throw SampleError(i, "it has " + std::to_string(protos.size()) + " tensors; its " + what + " would be tensor " +
                                 std::to_string(at + 1));
      return protos[at++];
    };
    if (image) parse_image(next("image"), outs[i][k++], i);
    if (label_type != kNoLabel) at += parse_label(protos, at, label_type, num_labels, outs[i][k++], i);
    for (int64_t a = 0; a < additional_inputs; ++a) parse_additional(next("additional input"), outs[i][k++], i);
    if (bbox) {
      const TensorProto& box = next("bounding box");
      if (box.data_type != kInt32 || box.int32s.size() != 4)
        throw SampleError(i, "its bounding box must be an INT32 tensor of 4 values");
      outs[i][k++].set(box.int32s.data(), 4, kCaffe2I32);
    }
  });
  return pack(outs, n_outputs);
}

}  // namespace penstock
