// Reading protocol buffers' wire format without a protobuf library: the readers whose records are
// protobuf messages (readers_tfrecord.cpp: tf.train.Example; readers_caffe.cpp: Caffe's Datum and
// Caffe2's TensorProtos) walk their few fields with this.
//
// A message is a sequence of fields, each a varint tag (field number << 3 | wire type) and a value:
// wire 0 a varint, 1 eight bytes, 2 a varint length and that many bytes (a string, a sub-message or
// a packed repeated field), 5 four bytes. Groups (wire 3 and 4) are long deprecated: malformed here.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

namespace penstock {

// The bytes [p, end) of a message; `ok` turns false at the first malformed or truncated value
// (and stays so), after which every read returns zeros.
struct WireReader {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;

  bool more() const { return ok && p < end; }

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

  // A length-delimited value: its bytes as a reader of their own.
  WireReader sub() {
    uint64_t n = varint();
    if (!ok || n > uint64_t(end - p)) { ok = false; return {end, end, false}; }
    WireReader r{p, p + n};
    p += n;
    return r;
  }

  // Four or eight bytes, little-endian (wire 5 and 1).
  template <typename T>
  T fixed() {
    T v{};
    if (end - p < int64_t(sizeof(T))) { ok = false; p = end; return v; }
    std::memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    return v;
  }

  void skip(int wire) {
    if (wire == 0) varint();
    else if (wire == 1) fixed<uint64_t>();
    else if (wire == 2) sub();
    else if (wire == 5) fixed<uint32_t>();
    else ok = false;
  }

  // The next field's tag as (field number, wire type); a field number of 0 is malformed.
  bool tag(int& field, int& wire) {
    uint64_t t = varint();
    field = int(t >> 3);
    wire = int(t & 7);
    if (ok && field == 0) ok = false;
    return ok;
  }
};

// A repeated scalar field's values, whether the writer packed them (wire 2) or not: appends the
// value(s) of one occurrence to `out`. `Wire` is the unpacked wire type: 0 varints (read as T),
// 5 floats, 1 doubles.
template <int Wire, typename T>
void read_repeated(WireReader& r, int wire, std::vector<T>& out) {
  auto one = [](WireReader& s) -> T {
    if constexpr (Wire == 0) return T(s.varint());
    else return s.fixed<T>();
  };
  if (wire == 2) {
    WireReader s = r.sub();
    while (s.more()) out.push_back(one(s));
    r.ok &= s.ok;
  } else if (wire == Wire) {
    out.push_back(one(r));
  } else {
    r.skip(wire);
  }
}

}  // namespace penstock
