// readers.numpy and decoders.numpy: .npy headers and (windowed) data, a batch of files (or of
// in-memory .npy files) at a time.
//
// Two calls per batch: npy_headers (npy_buffer_headers) parses every file's header (dtype, shape,
// order, where the data starts); Python then computes the region of interest and allocates the
// output; npy_read (npy_decode) copies each window into the packed output, transposing
// Fortran-order arrays to C order and filling the parts of a window outside the array with a
// fill value.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>

#include "engine/dtype.h"
#include "kernels/readers_numpy.h"

namespace penstock {
namespace {

struct Fd {
  int fd = -1;
  ~Fd() { if (fd >= 0) ::close(fd); }
};

void read_exact(int fd, void* dst, int64_t size, int64_t offset, int64_t i, const std::string& path) {
  int64_t done = 0;
  while (done < size) {
    ssize_t r = ::pread(fd, static_cast<char*>(dst) + done, size - done, offset + done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) throw SampleError(i, "'" + path + "' is truncated (expected " + std::to_string(size) +
                                         " bytes of data at offset " + std::to_string(offset) + ")");
    done += r;
  }
}

// Header text quoted in an error: bytes that are not printable ASCII as \xNN (Python decodes the
// message as UTF-8), at most 40 of them.
std::string printable(const std::string& text) {
  std::string out;
  for (size_t k = 0; k < text.size() && k < 40; ++k) {
    unsigned char c = static_cast<unsigned char>(text[k]);
    if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      char esc[5];
      std::snprintf(esc, sizeof esc, "\\x%02x", c);
      out += esc;
    }
  }
  return text.size() > 40 ? out + "..." : out;
}

struct Header {
  int dtype = -1;
  int64_t elem_size = 0;
  bool fortran = false;
  std::vector<int64_t> shape;
  int64_t data_offset = 0;
};

// The value text of `key` in the header dict ("'descr': '<f4', ..."), up to the next , or }.
std::string dict_value(const std::string& h, const std::string& key, int64_t i, const std::string& path) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) throw SampleError(i, "'" + path + "': the .npy header has no '" + key + "'");
  size_t c = h.find(':', k);
  if (c == std::string::npos) throw SampleError(i, "'" + path + "': malformed .npy header");
  size_t b = c + 1;
  while (b < h.size() && h[b] == ' ') ++b;
  if (b < h.size() && h[b] == '(') {
    size_t e = h.find(')', b);
    if (e == std::string::npos) throw SampleError(i, "'" + path + "': malformed .npy header");
    return h.substr(b, e - b + 1);
  }
  size_t e = b;
  while (e < h.size() && h[e] != ',' && h[e] != '}') ++e;
  return h.substr(b, e - b);
}

// numpy's type string ('<f4', '|u1', '|b1' ...) -> DALIDataType code and element size.
void parse_descr(std::string d, Header& out, int64_t i, const std::string& path) {
  if (d.size() >= 2 && (d.front() == '\'' || d.front() == '"')) d = d.substr(1, d.size() - 2);
  if (d.size() < 3) throw SampleError(i, "'" + path + "': unsupported .npy dtype '" + printable(d) + "'");
  char order = d[0], kind = d[1];
  int size = std::atoi(d.c_str() + 2);
  if (order == '>' && size > 1)
    throw SampleError(i, "'" + path + "': big-endian data ('" + printable(d) + "') is not supported");
  struct Entry { char kind; int size; DType code; };
  static const Entry table[] = {
      {'u', 1, DType::UINT8}, {'u', 2, DType::UINT16}, {'u', 4, DType::UINT32}, {'u', 8, DType::UINT64},
      {'i', 1, DType::INT8}, {'i', 2, DType::INT16}, {'i', 4, DType::INT32}, {'i', 8, DType::INT64},
      {'f', 2, DType::FLOAT16}, {'f', 4, DType::FLOAT}, {'f', 8, DType::FLOAT64}, {'b', 1, DType::BOOL}};
  for (const auto& e : table) {
    if (e.kind == kind && e.size == size) {
      out.dtype = static_cast<int>(e.code);
      out.elem_size = size;
      return;
    }
  }
  throw SampleError(i, "'" + path + "': unsupported .npy dtype '" + printable(d) + "'");
}

// The header of a .npy file of `total` bytes whose bytes `read(dst, size, offset)` gives; `name`
// (a path, or "sample i") names it in errors.
template <typename Read>
Header parse_npy(Read&& read, int64_t total, int64_t i, const std::string& name) {
  unsigned char pre[12] = {0};
  int64_t got = std::min<int64_t>(total, sizeof(pre));
  if (got > 0) read(pre, got, 0);
  if (got < 10 || std::memcmp(pre, "\x93NUMPY", 6) != 0)
    throw SampleError(i, "'" + name + "' is not a .npy file (bad magic)");
  int major = pre[6];
  int64_t hlen, start;
  if (major == 1) {
    hlen = pre[8] | (pre[9] << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (got < 12) throw SampleError(i, "'" + name + "': truncated .npy header");
    hlen = int64_t(pre[8]) | (int64_t(pre[9]) << 8) | (int64_t(pre[10]) << 16) | (int64_t(pre[11]) << 24);
    start = 12;
  } else {
    throw SampleError(i, "'" + name + "': unsupported .npy version " + std::to_string(major));
  }
  if (hlen <= 0 || hlen > (1 << 24) || start + hlen > total)
    throw SampleError(i, "'" + name + "': bad .npy header length");
  std::string h(hlen, '\0');
  read(&h[0], hlen, start);
  Header out;
  out.data_offset = start + hlen;
  parse_descr(dict_value(h, "descr", i, name), out, i, name);
  std::string fo = dict_value(h, "fortran_order", i, name);
  out.fortran = fo.find("True") != std::string::npos;
  std::string shape = dict_value(h, "shape", i, name);
  if (shape.empty() || shape.front() != '(')
    throw SampleError(i, "'" + name + "': malformed shape in the .npy header");
  const char* p = shape.c_str() + 1;
  while (*p && *p != ')') {
    while (*p == ' ' || *p == ',') ++p;
    if (*p == ')' || !*p) break;
    char* end = nullptr;
    long long v = std::strtoll(p, &end, 10);
    if (end == p || v < 0) throw SampleError(i, "'" + name + "': malformed shape in the .npy header");
    out.shape.push_back(v);
    p = end;
  }
  // the data's size, refused once it passes the file's (a claimed shape may overflow 64 bits)
  int64_t vol = 1, room = (total - out.data_offset) / std::max<int64_t>(out.elem_size, 1);
  for (auto s : out.shape) {
    if (s != 0 && vol > room / s) {
      vol = -1;
      break;
    }
    vol *= s;
  }
  for (auto s : out.shape)
    if (s == 0) vol = 0;
  if (vol < 0)
    throw SampleError(i, "'" + name + "' is truncated: the header's shape promises more data than the file's " +
                             std::to_string(total - out.data_offset) + " bytes");
  if (total < out.data_offset + vol * out.elem_size)
    throw SampleError(i, "'" + name + "' is truncated: the header promises " + std::to_string(vol * out.elem_size) +
                             " bytes of data, the file has " + std::to_string(total - out.data_offset));
  return out;
}

Header parse_header(const std::string& path, int64_t i) {
  Fd f;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) throw SampleError(i, "cannot open file '" + path + "': " + std::strerror(errno));
  off_t fsize = ::lseek(f.fd, 0, SEEK_END);
  return parse_npy([&](void* dst, int64_t size, int64_t offset) { read_exact(f.fd, dst, size, offset, i, path); },
                   fsize, i, path);
}

// The header table (readers_numpy.h) of parsed headers.
NpyHeaders header_table(const std::vector<Header>& hs) {
  int64_t n = static_cast<int64_t>(hs.size());
  int64_t maxnd = 0;
  for (auto& h : hs) maxnd = std::max<int64_t>(maxnd, h.shape.size());
  auto dtypes = ArrayOf<int32_t>::empty({n});
  auto esz = I64Array::empty({n}), offs = I64Array::empty({n}), ndims = I64Array::empty({n});
  auto fort = ArrayOf<uint8_t>::empty({n});
  auto shapes = I64Array::empty({n, maxnd});
  int64_t* sh = shapes.mutable_data();
  for (int64_t i = 0; i < n; ++i) {
    dtypes.mutable_data()[i] = hs[i].dtype;
    esz.mutable_data()[i] = hs[i].elem_size;
    offs.mutable_data()[i] = hs[i].data_offset;
    ndims.mutable_data()[i] = hs[i].shape.size();
    fort.mutable_data()[i] = hs[i].fortran;
    for (int64_t d = 0; d < maxnd; ++d) sh[i * maxnd + d] = d < (int64_t)hs[i].shape.size() ? hs[i].shape[d] : 0;
  }
  return {dtypes, esz, fort, offs, ndims, shapes};
}

}  // namespace

// The header table (header_table) of a batch of files.
NpyHeaders npy_headers(ThreadPool& pool, const std::vector<std::string>& paths) {
  int64_t n = static_cast<int64_t>(paths.size());
  std::vector<Header> hs(n);
  pool.parallel_for(n, [&](int64_t i) { hs[i] = parse_header(paths[i], i); });
  return header_table(hs);
}

// The header table of a batch of in-memory .npy files (uint8 samples).
NpyHeaders npy_buffer_headers(ThreadPool& pool, Array src, I64Array shapes, I64Array offsets) {
  BatchView in = make_batch_view(src, shapes, offsets, false);
  if (in.elem_size != 1) throw std::invalid_argument("npy_buffer_headers: the files must be uint8 buffers");
  std::vector<Header> hs(in.num_samples);
  pool.parallel_for(in.num_samples, [&](int64_t i) {
    const char* data = in.sample<char>(i);
    hs[i] = parse_npy([&](void* dst, int64_t size, int64_t offset) { std::memcpy(dst, data + offset, size); },
                      in.volume(i), i, "sample " + std::to_string(i));
  });
  return header_table(hs);
}

namespace {

// Window [anchor, anchor + out_shape) of an array (C or Fortran order at `src`) into C-order `dst`;
// elements outside the array take `fill` (elem_size bytes).
void copy_window(const char* src, const int64_t* shp, bool fortran, const int64_t* anc, const int64_t* osh,
                 int64_t nd, char* dst, int64_t elem_size, const uint8_t* fv) {
  int64_t out_vol = 1;
  for (int64_t d = 0; d < nd; ++d) out_vol *= osh[d];
  if (out_vol == 0) return;
  // element strides of the logical (C-order indexed) array in its stored layout
  std::vector<int64_t> stride(nd);
  int64_t s = 1;
  if (fortran) {
    for (int64_t d = 0; d < nd; ++d) { stride[d] = s; s *= shp[d]; }
  } else {
    for (int64_t d = nd - 1; d >= 0; --d) { stride[d] = s; s *= shp[d]; }
  }
  std::vector<int64_t> idx(nd, 0);
  int64_t inner = nd ? osh[nd - 1] : 1;
  for (int64_t done = 0; done < out_vol; done += inner) {
    bool inside = true;
    int64_t base = 0;
    for (int64_t d = 0; d + 1 < nd; ++d) {
      int64_t p = anc[d] + idx[d];
      inside &= p >= 0 && p < shp[d];
      base += p * stride[d];
    }
    char* row = dst + done * elem_size;
    int64_t a = nd ? anc[nd - 1] : 0, ext = nd ? shp[nd - 1] : 1, st = nd ? stride[nd - 1] : 1;
    for (int64_t k = 0; k < inner; ++k) {
      int64_t p = a + k;
      char* to = row + k * elem_size;
      if (inside && p >= 0 && p < ext)
        std::memcpy(to, src + (base + p * st) * elem_size, elem_size);
      else
        std::memcpy(to, fv, elem_size);
    }
    for (int64_t d = nd - 2; d >= 0; --d) {  // next row
      if (++idx[d] < osh[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace

// Copies window [anchor, anchor + out_shape) of each array (C or Fortran order on disk) into the
// packed C-order output; elements outside the array take `fill` (elem_size bytes).
void npy_read(ThreadPool& pool, const std::vector<std::string>& paths, I64Array data_offsets,
              ArrayOf<uint8_t> fortran, I64Array src_shapes, I64Array anchors, Array out, I64Array out_shapes,
              I64Array out_offsets, int64_t elem_size, ArrayOf<uint8_t> fill) {
  BatchView o = make_batch_view(out, out_shapes, out_offsets, true);
  int64_t n = o.num_samples, nd = o.ndim;
  if ((int64_t)paths.size() != n || src_shapes.ndim() != 2 || src_shapes.shape(0) != n ||
      src_shapes.shape(1) != nd || anchors.shape(0) != n || anchors.shape(1) != nd ||
      data_offsets.shape(0) != n || fortran.shape(0) != n || fill.shape(0) != elem_size)
    throw std::invalid_argument("npy_read: inconsistent argument sizes");
  const int64_t* ss = src_shapes.data();
  const int64_t* an = anchors.data();
  const int64_t* doff = data_offsets.data();
  const uint8_t* fo = fortran.data();
  const uint8_t* fv = fill.data();
  char* obase = static_cast<char*>(o.data);
  pool.parallel_for(n, [&](int64_t i) {
    const int64_t* shp = ss + i * nd;
    const int64_t* anc = an + i * nd;
    const int64_t* osh = o.shape(i);
    char* dst = obase + o.offsets[i] * elem_size;
    int64_t src_vol = 1, out_vol = 1;
    bool whole = true;
    for (int64_t d = 0; d < nd; ++d) {
      src_vol *= shp[d];
      out_vol *= osh[d];
      whole &= anc[d] == 0 && osh[d] == shp[d];
    }
    if (out_vol == 0) return;
    Fd f;
    f.fd = ::open(paths[i].c_str(), O_RDONLY | O_CLOEXEC);
    if (f.fd < 0) throw SampleError(i, "cannot open file '" + paths[i] + "': " + std::strerror(errno));
    if (whole && (!fo[i] || nd <= 1)) {  // the common case: straight into the output
      read_exact(f.fd, dst, src_vol * elem_size, doff[i], i, paths[i]);
      return;
    }
    std::vector<char> src(src_vol * elem_size);
    read_exact(f.fd, src.data(), src_vol * elem_size, doff[i], i, paths[i]);
    copy_window(src.data(), shp, fo[i], anc, osh, nd, dst, elem_size, fv);
  });
}

// decoders.numpy: the arrays of in-memory .npy files (uint8 samples at src_offsets, data at
// data_offsets bytes into each) into the packed C-order output.
void npy_decode(ThreadPool& pool, Array src, I64Array src_shapes, I64Array src_offsets, I64Array data_offsets,
                ArrayOf<uint8_t> fortran, Array out, I64Array out_shapes, I64Array out_offsets, int64_t elem_size) {
  BatchView in = make_batch_view(src, src_shapes, src_offsets, false);
  BatchView o = make_batch_view(out, out_shapes, out_offsets, true);
  const int64_t n = o.num_samples, nd = o.ndim;
  if (in.num_samples != n || data_offsets.shape(0) != n || fortran.shape(0) != n)
    throw std::invalid_argument("npy_decode: inconsistent argument sizes");
  for (int64_t i = 0; i < n; ++i)
    if (data_offsets.at(i) < 0 || data_offsets.at(i) + o.volume(i) * elem_size > in.volume(i))
      throw SampleError(i, "npy_decode: the array's data lies outside its file");
  const uint8_t* fo = fortran.data();
  char* obase = static_cast<char*>(o.data);
  std::vector<int64_t> zeros(nd, 0);
  const uint8_t fill[16] = {0};
  pool.parallel_for(n, [&](int64_t i) {
    const char* data = in.sample<char>(i) + data_offsets.at(i);
    char* dst = obase + o.offsets[i] * elem_size;
    if (!fo[i] || nd <= 1) std::memcpy(dst, data, o.volume(i) * elem_size);
    else copy_window(data, o.shape(i), true, zeros.data(), o.shape(i), nd, dst, elem_size, fill);
  });
}

}  // namespace penstock
