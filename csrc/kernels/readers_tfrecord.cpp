// readers.tfrecord: reads records (located by index files) and parses tf.train.Example protobufs
// for the requested features, a batch at a time, without TensorFlow.
//
// Example := { 1: Features }, Features := { 1: map entry { 1: key, 2: Feature } }*,
// Feature := oneof { 1: BytesList { 1: bytes* }, 2: FloatList { 1: float* (packed) },
// 3: Int64List { 1: int64* (packed varints) } }.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "engine/module.h"

namespace penstock {
namespace {

struct Fd {
  int fd = -1;
  ~Fd() { if (fd >= 0) ::close(fd); }
};

struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) { ok = false; return 0; }
      uint8_t b = *p++;
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    ok = false;
    return 0;
  }
  // A length-delimited field: [p, p + n) as a sub-reader.
  Reader sub() {
    uint64_t n = varint();
    if (!ok || n > uint64_t(end - p)) { ok = false; return {end, end}; }
    Reader r{p, p + n};
    p += n;
    return r;
  }
  void skip(int wire) {
    if (wire == 0) varint();
    else if (wire == 1) p = (end - p >= 8) ? p + 8 : (ok = false, end);
    else if (wire == 2) sub();
    else if (wire == 5) p = (end - p >= 4) ? p + 4 : (ok = false, end);
    else ok = false;
  }
};

enum Kind { BYTES = 0, FLOAT = 1, INT64 = 2 };

// Values of one feature of one record; `found` is false when the record lacks it.
struct Values {
  bool found = false;
  std::vector<uint8_t> bytes;   // BYTES: all values concatenated
  std::vector<float> floats;
  std::vector<int64_t> ints;
};

void parse_list(Reader r, int kind, Values& v) {
  while (r.ok && r.p < r.end) {
    uint64_t tag = r.varint();
    int field = int(tag >> 3), wire = int(tag & 7);
    if (field != 1) { r.skip(wire); continue; }
    if (kind == BYTES && wire == 2) {
      Reader s = r.sub();
      v.bytes.insert(v.bytes.end(), s.p, s.end);
    } else if (kind == FLOAT && wire == 2) {  // packed
      Reader s = r.sub();
      size_t n = (s.end - s.p) / 4;
      size_t at = v.floats.size();
      v.floats.resize(at + n);
      std::memcpy(v.floats.data() + at, s.p, n * 4);
    } else if (kind == FLOAT && wire == 5) {
      float f;
      if (r.end - r.p < 4) { r.ok = false; break; }
      std::memcpy(&f, r.p, 4);
      r.p += 4;
      v.floats.push_back(f);
    } else if (kind == INT64 && wire == 2) {  // packed
      Reader s = r.sub();
      while (s.ok && s.p < s.end) v.ints.push_back(int64_t(s.varint()));
      r.ok &= s.ok;
    } else if (kind == INT64 && wire == 0) {
      v.ints.push_back(int64_t(r.varint()));
    } else {
      r.skip(wire);
    }
  }
  if (!r.ok) throw std::runtime_error("malformed feature list");
}

// Parses one Example into values[feature] for the requested names.
void parse_example(const uint8_t* data, size_t size, const std::unordered_map<std::string, int>& wanted,
                   const std::vector<int>& kinds, std::vector<Values>& values) {
  Reader ex{data, data + size};
  while (ex.ok && ex.p < ex.end) {
    uint64_t tag = ex.varint();
    if ((tag >> 3) != 1 || (tag & 7) != 2) { ex.skip(int(tag & 7)); continue; }
    Reader feats = ex.sub();
    while (feats.ok && feats.p < feats.end) {
      uint64_t t = feats.varint();
      if ((t >> 3) != 1 || (t & 7) != 2) { feats.skip(int(t & 7)); continue; }
      Reader entry = feats.sub();
      std::string key;
      Reader feature{nullptr, nullptr};
      bool has_feature = false;
      while (entry.ok && entry.p < entry.end) {
        uint64_t et = entry.varint();
        int field = int(et >> 3), wire = int(et & 7);
        if (field == 1 && wire == 2) {
          Reader k = entry.sub();
          key.assign(reinterpret_cast<const char*>(k.p), k.end - k.p);
        } else if (field == 2 && wire == 2) {
          feature = entry.sub();
          has_feature = true;
        } else {
          entry.skip(wire);
        }
      }
      if (!entry.ok) throw std::runtime_error("malformed feature map entry");
      auto it = wanted.find(key);
      if (it == wanted.end() || !has_feature) continue;
      int f = it->second;
      Values& v = values[f];
      v.found = true;
      while (feature.ok && feature.p < feature.end) {
        uint64_t ft = feature.varint();
        int kind_field = int(ft >> 3), wire = int(ft & 7);
        if (wire != 2) { feature.skip(wire); continue; }
        Reader list = feature.sub();
        int kind = kind_field - 1;  // 1 bytes, 2 float, 3 int64
        if (kind != kinds[f])
          throw std::runtime_error("feature '" + key + "' has type " +
                                   (kind == BYTES ? "bytes" : kind == FLOAT ? "float" : "int64") +
                                   ", not the one declared");
        parse_list(list, kind, v);
      }
      if (!feature.ok) throw std::runtime_error("malformed feature '" + key + "'");
    }
    if (!feats.ok) throw std::runtime_error("malformed features");
  }
  if (!ex.ok) throw std::runtime_error("malformed Example");
}

// For each feature: (values array, counts int64 [N], found uint8 [N]).
py::list tfrecord_read(ThreadPool& pool, const std::vector<std::string>& paths, I64Array offsets,
                       I64Array sizes, const std::vector<std::string>& names, const std::vector<int>& kinds) {
  int64_t n = static_cast<int64_t>(paths.size());
  if (offsets.shape(0) != n || sizes.shape(0) != n || names.size() != kinds.size())
    throw std::invalid_argument("tfrecord_read: inconsistent argument sizes");
  std::unordered_map<std::string, int> wanted;
  for (size_t f = 0; f < names.size(); ++f) wanted[names[f]] = int(f);
  int64_t nf = names.size();
  std::vector<std::vector<Values>> all(n, std::vector<Values>(nf));
  const int64_t* off = offsets.data();
  const int64_t* sz = sizes.data();
  {
    py::gil_scoped_release nogil;
    pool.parallel_for(n, [&](int64_t i) {
      Fd f;
      f.fd = ::open(paths[i].c_str(), O_RDONLY | O_CLOEXEC);
      if (f.fd < 0) throw SampleError(i, "cannot open file '" + paths[i] + "': " + std::strerror(errno));
      std::vector<uint8_t> rec(sz[i]);
      int64_t done = 0;
      while (done < sz[i]) {
        ssize_t r = ::pread(f.fd, rec.data() + done, sz[i] - done, off[i] + done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) throw SampleError(i, "'" + paths[i] + "' is shorter than its index says (record at offset " +
                                             std::to_string(off[i]) + ")");
        done += r;
      }
      if (sz[i] < 16) throw SampleError(i, "record at offset " + std::to_string(off[i]) + " of '" + paths[i] +
                                               "' is too short");
      uint64_t len;
      std::memcpy(&len, rec.data(), 8);
      if (len + 16 > uint64_t(sz[i]))
        throw SampleError(i, "record at offset " + std::to_string(off[i]) + " of '" + paths[i] +
                                 "' is longer than its index entry (is the index file for this file?)");
      try {
        parse_example(rec.data() + 12, len, wanted, kinds, all[i]);
      } catch (const std::runtime_error& e) {
        throw SampleError(i, std::string(e.what()) + " in the record at offset " + std::to_string(off[i]) +
                                 " of '" + paths[i] + "'");
      }
    });
  }
  py::list out;
  for (int64_t f = 0; f < nf; ++f) {
    py::array_t<int64_t> counts(n);
    py::array_t<uint8_t> found(n);
    int64_t total = 0;
    for (int64_t i = 0; i < n; ++i) {
      const Values& v = all[i][f];
      int64_t c = kinds[f] == BYTES ? v.bytes.size() : kinds[f] == FLOAT ? v.floats.size() : v.ints.size();
      counts.mutable_data()[i] = c;
      found.mutable_data()[i] = v.found;
      total += c;
    }
    py::array values;
    if (kinds[f] == BYTES) {
      py::array_t<uint8_t> a(total);
      uint8_t* d = a.mutable_data();
      for (int64_t i = 0; i < n; ++i) d = std::copy(all[i][f].bytes.begin(), all[i][f].bytes.end(), d);
      values = a;
    } else if (kinds[f] == FLOAT) {
      py::array_t<float> a(total);
      float* d = a.mutable_data();
      for (int64_t i = 0; i < n; ++i) d = std::copy(all[i][f].floats.begin(), all[i][f].floats.end(), d);
      values = a;
    } else {
      py::array_t<int64_t> a(total);
      int64_t* d = a.mutable_data();
      for (int64_t i = 0; i < n; ++i) d = std::copy(all[i][f].ints.begin(), all[i][f].ints.end(), d);
      values = a;
    }
    out.append(py::make_tuple(values, counts, found));
  }
  return out;
}

}  // namespace
}  // namespace penstock

PENSTOCK_BINDINGS(tfrecord) {
  m.def("tfrecord_read", &penstock::tfrecord_read, "Read and parse tf.train.Example records",
        py::arg("pool"), py::arg("paths"), py::arg("offsets"), py::arg("sizes"), py::arg("names"),
        py::arg("kinds"));
}
