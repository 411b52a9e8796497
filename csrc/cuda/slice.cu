// N-d window copy (kernels/slice.cpp): out = in[anchor : anchor + out_shape] per dim, with
// per-axis flips and a fill value (chosen by the output's channel index) outside the input.
// Works on element bytes: one instantiation per element size serves every type.
enum SliceDesc { kInOff, kOutOff, kVolume, kFlips, kInShape = 4, kOutShape = 12, kAnchor = 20, kDesc = 28 };

template <typename U>
__device__ void slice_copy(const U* src, U* dst, const i64* desc, const i64* block_start, int n, int nd,
                           const U* fill, int num_fill, int channel_dim) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kDesc;
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kVolume]) return;
  i64 rem = e, src_off = 0, in_stride = 1;
  int channel = 0;
  bool inside = true;
  for (int dim = nd - 1; dim >= 0; --dim) {
    i64 w = d[kOutShape + dim];
    i64 x = rem % w;
    rem /= w;
    if (dim == channel_dim) channel = int(x);
    i64 sx = window_source(d[kAnchor + dim], w, d[kInShape + dim], (d[kFlips] >> dim) & 1, x);
    inside = inside && sx >= 0;
    src_off += sx * in_stride;
    in_stride *= d[kInShape + dim];
  }
  dst[d[kOutOff] + e] = inside ? src[d[kInOff] + src_off] : fill[i64(s) * num_fill + (num_fill == 1 ? 0 : channel)];
}

#define PENSTOCK_SLICE(U)                                                                               \
  extern "C" __global__ void slice_##U(const U* src, U* dst, const i64* desc, const i64* block_start, int n, \
                                       int nd, const U* fill, int num_fill, int channel_dim) {          \
    slice_copy<U>(src, dst, desc, block_start, n, nd, fill, num_fill, channel_dim);                     \
  }
PENSTOCK_SLICE(u8)
PENSTOCK_SLICE(u16)
PENSTOCK_SLICE(u32)
PENSTOCK_SLICE(u64)

// Transpose (kernels/layout.cpp): output element e at coordinates (out_shape order) reads the
// source through src_stride[d] = the input stride of dimension perm[d].
enum TransposeDesc { kTInOff, kTOutOff, kTVolume, kTOutShape = 3, kTSrcStride = 11, kTDesc = 19 };

template <typename U>
__device__ void transpose_copy(const U* src, U* dst, const i64* desc, const i64* block_start, int n, int nd) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kTDesc;
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kTVolume]) return;
  i64 rem = e, off = 0;
  for (int dim = nd - 1; dim >= 0; --dim) {
    i64 w = d[kTOutShape + dim];
    off += (rem % w) * d[kTSrcStride + dim];
    rem /= w;
  }
  dst[d[kTOutOff] + e] = src[d[kTInOff] + off];
}

#define PENSTOCK_TRANSPOSE(U)                                                                           \
  extern "C" __global__ void transpose_##U(const U* src, U* dst, const i64* desc, const i64* block_start, \
                                           int n, int nd) {                                             \
    transpose_copy<U>(src, dst, desc, block_start, n, nd);                                              \
  }
PENSTOCK_TRANSPOSE(u8)
PENSTOCK_TRANSPOSE(u16)
PENSTOCK_TRANSPOSE(u32)
PENSTOCK_TRANSPOSE(u64)

// Concatenation along one axis (kernels/layout.cpp's concat; stack = concat of a new unit axis):
// a sample is [outer, total, inner] with `total` the sum of the inputs' extents along the axis;
// input j of sample s starts at device address src[j] and has extent[j] along the axis.
enum ConcatDesc { kCOutOff, kCVolume, kCTotal, kCInner, kCInputs = 4 };

template <typename U>
__device__ void concat_copy(U* dst, const i64* desc, const i64* block_start, int n, int k) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + i64(s) * (kCInputs + 2 * k);
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kCVolume]) return;
  i64 inner = d[kCInner], total = d[kCTotal];
  i64 o = e / (total * inner), r = e - o * total * inner, a = r / inner, in = r - a * inner;
  int j = 0;
  i64 start = 0;
  while (j + 1 < k && a >= start + d[kCInputs + 2 * j + 1]) {
    start += d[kCInputs + 2 * j + 1];
    ++j;
  }
  i64 extent = d[kCInputs + 2 * j + 1];
  const U* src = reinterpret_cast<const U*>(d[kCInputs + 2 * j]);
  dst[d[kCOutOff] + e] = src[(o * extent + (a - start)) * inner + in];
}

#define PENSTOCK_CONCAT(U)                                                                                  \
  extern "C" __global__ void concat_##U(U* dst, const i64* desc, const i64* block_start, int n, int k) {   \
    concat_copy<U>(dst, desc, block_start, n, k);                                                           \
  }
PENSTOCK_CONCAT(u8)
PENSTOCK_CONCAT(u16)
PENSTOCK_CONCAT(u32)
PENSTOCK_CONCAT(u64)
