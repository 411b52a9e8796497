// one_hot (operators/one_hot.py): out[outer, class, inner] = on if trunc(label[outer, inner]) ==
// class else off; labels outside [0, classes) give a row of off. One thread per output element;
// on/off arrive already converted to the output type, so one instantiation per element size
// (and label type) serves every output type.
enum OneHotDesc { kOInOff, kOOutOff, kOVolume, kOInner, kODesc = 4 };

template <typename L> __device__ __forceinline__ bool label_is(L v, i64 cls) { return i64(v) == cls; }
template <> __device__ __forceinline__ bool label_is<f32>(f32 v, i64 cls) { return truncf(v) == float(cls); }
template <> __device__ __forceinline__ bool label_is<f64>(f64 v, i64 cls) { return trunc(v) == double(cls); }
template <> __device__ __forceinline__ bool label_is<f16>(f16 v, i64 cls) { return truncf(half_to_float(v)) == float(cls); }

template <typename L, typename U>
__device__ void one_hot_batch(const L* src, U* dst, const i64* desc, const i64* block_start, int n, i64 classes,
                              U on, U off) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kODesc;
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kOVolume]) return;
  const i64 inner = d[kOInner];
  const i64 i = e % inner, rest = e / inner, cls = rest % classes, outer = rest / classes;
  dst[d[kOOutOff] + e] = label_is<L>(src[d[kOInOff] + outer * inner + i], cls) ? on : off;
}

#define PENSTOCK_ONE_HOT(L, U)                                                                          \
  extern "C" __global__ void one_hot_##L##_##U(const L* src, U* dst, const i64* desc, const i64* block_start, \
                                               int n, i64 classes, U on, U off) {                       \
    one_hot_batch<L, U>(src, dst, desc, block_start, n, classes, on, off);                              \
  }
#define PENSTOCK_ONE_HOT_OUT(L) PENSTOCK_ONE_HOT(L, u8) PENSTOCK_ONE_HOT(L, u16) PENSTOCK_ONE_HOT(L, u32) PENSTOCK_ONE_HOT(L, u64)
PENSTOCK_ONE_HOT_OUT(u8) PENSTOCK_ONE_HOT_OUT(u16) PENSTOCK_ONE_HOT_OUT(u32) PENSTOCK_ONE_HOT_OUT(u64)
PENSTOCK_ONE_HOT_OUT(i8) PENSTOCK_ONE_HOT_OUT(i16) PENSTOCK_ONE_HOT_OUT(i32) PENSTOCK_ONE_HOT_OUT(i64)
PENSTOCK_ONE_HOT_OUT(f16) PENSTOCK_ONE_HOT_OUT(f32) PENSTOCK_ONE_HOT_OUT(f64)
