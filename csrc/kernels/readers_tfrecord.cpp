// readers.tfrecord: reads records (located by index files), verifies their checksums and parses
// tf.train.Example protobufs for the requested features, a batch at a time, without TensorFlow.
//
// A record is: uint64 length, uint32 masked CRC32C of the length's 8 bytes, length bytes of data,
// uint32 masked CRC32C of the data (all little-endian). A mismatch is an error of the record's
// sample (TensorFlow's DataLossError), so on_error decides. CRC32C runs on the CPU's CRC
// instruction (SSE4.2) over three interleaved streams where it has one, else on a table.
//
// Example := { 1: Features }, Features := { 1: map entry { 1: key, 2: Feature } }*,
// Feature := oneof { 1: BytesList { 1: bytes* }, 2: FloatList { 1: float* (packed) },
// 3: Int64List { 1: int64* (packed varints) } }.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

#include "kernels/protobuf_wire.h"
#include "kernels/readers_tfrecord.h"

namespace penstock {
namespace {

// ---- CRC32C (Castagnoli, reflected polynomial 0x82F63B78) -------------------------------------
constexpr uint32_t kPoly = 0x82F63B78u;

// CRCs of interleaved streams are joined by feeding one stream's register the zero bytes of the
// streams after it: a linear map of the register, a 32x32 matrix over GF(2) (zlib's method). A
// matrix is its columns: mat[i] is the image of bit i.
using Gf2Matrix = std::array<uint32_t, 32>;

uint32_t gf2_times(const Gf2Matrix& mat, uint32_t vec) {
  uint32_t sum = 0;
  for (int i = 0; vec; ++i, vec >>= 1)
    if (vec & 1) sum ^= mat[i];
  return sum;
}

Gf2Matrix gf2_product(const Gf2Matrix& a, const Gf2Matrix& b) {
  Gf2Matrix out;
  for (int n = 0; n < 32; ++n) out[n] = gf2_times(a, b[n]);
  return out;
}

// The map of feeding `bytes` zero bytes.
Gf2Matrix zeros_operator(size_t bytes) {
  Gf2Matrix step, result;
  step[0] = kPoly;  // one zero bit: shift right, folding the polynomial in for bit 0
  for (int n = 1; n < 32; ++n) step[n] = 1u << (n - 1);
  for (int k = 0; k < 3; ++k) step = gf2_product(step, step);  // eight bits
  for (int n = 0; n < 32; ++n) result[n] = 1u << n;
  for (; bytes; bytes >>= 1, step = gf2_product(step, step))
    if (bytes & 1) result = gf2_product(step, result);
  return result;
}

// Applying a zeros operator a byte of the register at a time.
struct ShiftTable {
  uint32_t t[4][256];
  explicit ShiftTable(size_t bytes) {
    Gf2Matrix op = zeros_operator(bytes);
    for (int k = 0; k < 4; ++k)
      for (uint32_t n = 0; n < 256; ++n) t[k][n] = gf2_times(op, n << (8 * k));
  }
  uint32_t operator()(uint32_t crc) const {
    return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff] ^ t[3][crc >> 24];
  }
};

struct ByteTable {
  uint32_t t[256];
  ByteTable() {
    for (uint32_t n = 0; n < 256; ++n) {
      uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = c & 1 ? (c >> 1) ^ kPoly : c >> 1;
      t[n] = c;
    }
  }
};

uint32_t crc32c_table(uint32_t crc, const uint8_t* p, size_t n) {
  static const ByteTable table;
  for (; n; --n) crc = table.t[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
// Three independent streams keep the CRC instruction's pipeline full (one result per cycle, three
// cycles' latency); their registers are then joined by shifting over the bytes that follow.
constexpr size_t kLongBlock = 8192, kShortBlock = 256;

__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(uint32_t crc, const uint8_t* p, size_t n) {
  static const ShiftTable shift_long(kLongBlock), shift_short(kShortBlock);
  uint64_t c0 = crc;
  auto load = [](const uint8_t* q) { uint64_t v; std::memcpy(&v, q, 8); return v; };
  for (size_t block : {kLongBlock, kShortBlock}) {
    const ShiftTable& shift = block == kLongBlock ? shift_long : shift_short;
    for (; n >= 3 * block; n -= 3 * block, p += 3 * block) {
      uint64_t c1 = 0, c2 = 0;
      for (size_t k = 0; k < block; k += 8) {
        c0 = _mm_crc32_u64(c0, load(p + k));
        c1 = _mm_crc32_u64(c1, load(p + block + k));
        c2 = _mm_crc32_u64(c2, load(p + 2 * block + k));
      }
      c0 = shift(shift(uint32_t(c0)) ^ uint32_t(c1)) ^ uint32_t(c2);
    }
  }
  for (; n >= 8; n -= 8, p += 8) c0 = _mm_crc32_u64(c0, load(p));
  uint32_t c = uint32_t(c0);
  for (; n; --n) c = _mm_crc32_u8(c, *p++);
  return c;
}
#endif

uint32_t crc32c(const uint8_t* p, size_t n) {
#if defined(__x86_64__)
  static const bool hardware = __builtin_cpu_supports("sse4.2");
  if (hardware) return ~crc32c_sse42(~0u, p, n);
#endif
  return ~crc32c_table(~0u, p, n);
}

// TFRecord stores CRCs rotated and offset ("masked"): a CRC of data holding CRCs is still strong.
uint32_t masked_crc32c(const uint8_t* p, size_t n) {
  uint32_t c = crc32c(p, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

// Why [p, p + n) is corrupt, or "" when its masked CRC32C is `stored`.
std::string crc_mismatch(const uint8_t* p, size_t n, const uint8_t* stored, const char* what, int64_t offset,
                         const std::string& path) {
  uint32_t want, got = masked_crc32c(p, n);
  std::memcpy(&want, stored, 4);
  if (got == want) return "";
  char crcs[64];
  std::snprintf(crcs, sizeof(crcs), "stored 0x%08x, computed 0x%08x", want, got);
  return "corrupted record at offset " + std::to_string(offset) + " of '" + path + "': the CRC32C of its " + what +
         " does not match (" + crcs + ")";
}

// Throws when the masked CRC32C of [p, p + n) is not `stored`.
void check_crc(const uint8_t* p, size_t n, const uint8_t* stored, const char* what, int64_t sample,
               int64_t offset, const std::string& path) {
  std::string why = crc_mismatch(p, n, stored, what, offset, path);
  if (!why.empty()) throw SampleError(sample, why);
}

struct Fd {
  int fd = -1;
  ~Fd() { if (fd >= 0) ::close(fd); }
};

enum Kind { BYTES = 0, FLOAT = 1, INT64 = 2 };

// Values of one feature of one record; `found` is false when the record lacks it.
struct Values {
  bool found = false;
  std::vector<uint8_t> bytes;   // BYTES: all values concatenated
  std::vector<float> floats;
  std::vector<int64_t> ints;
};

void parse_list(WireReader r, int kind, Values& v) {
  while (r.ok && r.p < r.end) {
    uint64_t tag = r.varint();
    int field = int(tag >> 3), wire = int(tag & 7);
    if (field != 1) { r.skip(wire); continue; }
    if (kind == BYTES && wire == 2) {
      WireReader s = r.sub();
      v.bytes.insert(v.bytes.end(), s.p, s.end);
    } else if (kind == FLOAT && wire == 2) {  // packed
      WireReader s = r.sub();
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
      WireReader s = r.sub();
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
  WireReader ex{data, data + size};
  while (ex.ok && ex.p < ex.end) {
    uint64_t tag = ex.varint();
    if ((tag >> 3) != 1 || (tag & 7) != 2) { ex.skip(int(tag & 7)); continue; }
    WireReader feats = ex.sub();
    while (feats.ok && feats.p < feats.end) {
      uint64_t t = feats.varint();
      if ((t >> 3) != 1 || (t & 7) != 2) { feats.skip(int(t & 7)); continue; }
      WireReader entry = feats.sub();
      std::string key;
      WireReader feature{nullptr, nullptr};
      bool has_feature = false;
      while (entry.ok && entry.p < entry.end) {
        uint64_t et = entry.varint();
        int field = int(et >> 3), wire = int(et & 7);
        if (field == 1 && wire == 2) {
          WireReader k = entry.sub();
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
        WireReader list = feature.sub();
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

}  // namespace

std::tuple<I64Array, I64Array> tfrecord_index(const std::string& path) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (f.fd < 0 || ::fstat(f.fd, &st) != 0)
    throw std::runtime_error("cannot open TFRecord file '" + path + "': " + std::strerror(errno));
  const int64_t end = st.st_size;
  std::vector<int64_t> offsets, sizes;
  for (int64_t offset = 0; offset < end;) {
    uint8_t head[12];
    int64_t done = 0;
    while (done < 12 && offset + done < end) {
      ssize_t r = ::pread(f.fd, head + done, 12 - done, offset + done);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) throw std::runtime_error("cannot read '" + path + "' at offset " + std::to_string(offset + done));
      done += r;
    }
    if (done < 12)
      throw std::runtime_error("'" + path + "' ends inside a record header at offset " + std::to_string(offset));
    // the length is trusted only once its CRC matches: a damaged one would claim any size
    std::string why = crc_mismatch(head, 8, head + 8, "length", offset, path);
    if (!why.empty()) throw std::runtime_error(why + ": the length field is damaged");
    uint64_t len;
    std::memcpy(&len, head, 8);
    if (end - offset < 16 || len > uint64_t(end - offset - 16))
      throw std::runtime_error("'" + path + "' ends inside the record at offset " + std::to_string(offset) +
                               " (its length field says " + std::to_string(len) + " bytes of data, the file has " +
                               std::to_string(end - offset - 12) + " bytes after its header)");
    offsets.push_back(offset);
    sizes.push_back(int64_t(len) + 16);
    offset += int64_t(len) + 16;
  }
  auto out_offsets = I64Array::empty({int64_t(offsets.size())});
  auto out_sizes = I64Array::empty({int64_t(sizes.size())});
  std::copy(offsets.begin(), offsets.end(), out_offsets.mutable_data());
  std::copy(sizes.begin(), sizes.end(), out_sizes.mutable_data());
  return {out_offsets, out_sizes};
}

// For each feature: (values array, counts int64 [N], found uint8 [N]).
std::vector<TfrecordFeature> tfrecord_read(ThreadPool& pool, const std::vector<std::string>& paths, I64Array offsets,
                                           I64Array sizes, const std::vector<std::string>& names,
                                           const std::vector<int>& kinds) {
  int64_t n = static_cast<int64_t>(paths.size());
  if (offsets.shape(0) != n || sizes.shape(0) != n || names.size() != kinds.size())
    throw std::invalid_argument("tfrecord_read: inconsistent argument sizes");
  std::unordered_map<std::string, int> wanted;
  for (size_t f = 0; f < names.size(); ++f) wanted[names[f]] = int(f);
  int64_t nf = names.size();
  std::vector<std::vector<Values>> all(n, std::vector<Values>(nf));
  const int64_t* off = offsets.data();
  const int64_t* sz = sizes.data();
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
    check_crc(rec.data(), 8, rec.data() + 8, "length", i, off[i], paths[i]);
    uint64_t len;
    std::memcpy(&len, rec.data(), 8);
    if (len + 16 > uint64_t(sz[i]))
      throw SampleError(i, "record at offset " + std::to_string(off[i]) + " of '" + paths[i] +
                               "' is longer than its index entry (is the index file for this file?)");
    check_crc(rec.data() + 12, len, rec.data() + 12 + len, "data", i, off[i], paths[i]);
    try {
      parse_example(rec.data() + 12, len, wanted, kinds, all[i]);
    } catch (const std::runtime_error& e) {
      throw SampleError(i, std::string(e.what()) + " in the record at offset " + std::to_string(off[i]) +
                               " of '" + paths[i] + "'");
    }
  });
  std::vector<TfrecordFeature> out;
  for (int64_t f = 0; f < nf; ++f) {
    auto counts = I64Array::empty({n});
    auto found = ArrayOf<uint8_t>::empty({n});
    int64_t total = 0;
    for (int64_t i = 0; i < n; ++i) {
      const Values& v = all[i][f];
      int64_t c = kinds[f] == BYTES ? v.bytes.size() : kinds[f] == FLOAT ? v.floats.size() : v.ints.size();
      counts.mutable_data()[i] = c;
      found.mutable_data()[i] = v.found;
      total += c;
    }
    Array values;
    if (kinds[f] == BYTES) {
      auto a = ArrayOf<uint8_t>::empty({total});
      uint8_t* d = a.mutable_data();
      for (int64_t i = 0; i < n; ++i) d = std::copy(all[i][f].bytes.begin(), all[i][f].bytes.end(), d);
      values = a;
    } else if (kinds[f] == FLOAT) {
      auto a = ArrayOf<float>::empty({total});
      float* d = a.mutable_data();
      for (int64_t i = 0; i < n; ++i) d = std::copy(all[i][f].floats.begin(), all[i][f].floats.end(), d);
      values = a;
    } else {
      auto a = I64Array::empty({total});
      int64_t* d = a.mutable_data();
      for (int64_t i = 0; i < n; ++i) d = std::copy(all[i][f].ints.begin(), all[i][f].ints.end(), d);
      values = a;
    }
    out.emplace_back(values, counts, found);
  }
  return out;
}

}  // namespace penstock
