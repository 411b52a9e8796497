// Occlusion augmentations (kernels/occlusion.cpp): erase (fill axis-aligned boxes) and grid_mask
// (zero a rotated grid of squares). One thread per element (erase) or pixel (grid_mask).
enum EraseDesc { kEInOff, kEOutOff, kEVolume, kEBoxBegin, kEBoxEnd, kEShape = 5, kEDesc = 13 };

// boxes: [R, 2 * nd] (start..., end...), clipped here; an element inside any of its sample's
// boxes takes fill[c] (c = index along the last axis when there are several fill values), of the
// sample's row of fill values (fill_stride apart; 0: one row for all).
template <typename T>
__device__ void erase_batch(const T* src, T* dst, const i64* desc, const i64* block_start, int n, int nd,
                            const i64* boxes, const float* fill, int num_fill, int fill_stride) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kEDesc;
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kEVolume]) return;
  i64 idx[8];
  i64 rem = e;
  for (int dim = nd - 1; dim >= 0; --dim) {
    idx[dim] = rem % d[kEShape + dim];
    rem /= d[kEShape + dim];
  }
  bool inside = false;
  for (i64 b = d[kEBoxBegin]; b < d[kEBoxEnd] && !inside; ++b) {
    const i64* box = boxes + b * 2 * nd;
    bool in_box = true;
    for (int dim = 0; dim < nd; ++dim) {  // [lo, hi) clipped to the sample: only lo <= idx < hi matters
      in_box = in_box && idx[dim] >= box[dim] && idx[dim] < box[nd + dim];
    }
    inside = in_box;
  }
  T v = src[d[kEInOff] + e];
  if (inside) v = pixel_from<T>(fill[i64(s) * fill_stride + (num_fill > 1 ? idx[nd - 1] % num_fill : 0)]);
  dst[d[kEOutOff] + e] = v;
}

#define PENSTOCK_ERASE(T)                                                                               \
  extern "C" __global__ void erase_##T(const T* src, T* dst, const i64* desc, const i64* block_start,  \
                                       int n, int nd, const i64* boxes, const float* fill, int num_fill, \
                                       int fill_stride) {                                                \
    erase_batch<T>(src, dst, desc, block_start, n, nd, boxes, fill, num_fill, fill_stride);             \
  }
PENSTOCK_ERASE(u8) PENSTOCK_ERASE(i16) PENSTOCK_ERASE(u16) PENSTOCK_ERASE(i32) PENSTOCK_ERASE(f32)

// Grid mask: params per sample (planned on the host in float, as the CPU kernel computes them):
// cos(angle)/tile, sin(angle)/tile, shift_x/tile, shift_y/tile, ratio. Pixel (x, y) in grid
// units: u = x ca - y sa - sx, v = x sa + y ca - sy; zeroed when frac(u) < ratio and frac(v) <
// ratio. Explicit _rn operations: no fused multiply-add, the same roundings as the CPU.
enum GridDesc { kGInOff, kGOutOff, kGPixels, kGW, kGC, kGDesc = 5 };

__device__ __forceinline__ float grid_frac(float v) { return fabsf(v) < 8388608.f ? __fsub_rn(v, floorf(v)) : 0.f; }

template <typename T>
__device__ void grid_mask_batch(const T* src, T* dst, const i64* desc, const i64* block_start, int n,
                                const float* params) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kGDesc;
  i64 p = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (p >= d[kGPixels]) return;
  const float* q = params + s * 5;
  const float ca = q[0], sa = q[1], sx = q[2], sy = q[3], ratio = q[4];
  const float y = float(p / d[kGW]), x = float(p % d[kGW]);
  const float uy = __fsub_rn(-sx, __fmul_rn(y, sa)), vy = __fadd_rn(-sy, __fmul_rn(y, ca));
  const float u = __fadd_rn(uy, __fmul_rn(x, ca)), v = __fadd_rn(vy, __fmul_rn(x, sa));
  const bool keep = grid_frac(u) >= ratio || grid_frac(v) >= ratio;
  const i64 C = d[kGC];
  const T* in = src + d[kGInOff] + p * C;
  T* out = dst + d[kGOutOff] + p * C;
  for (i64 c = 0; c < C; ++c) out[c] = keep ? in[c] : T(0);
}

#define PENSTOCK_GRID_MASK(T)                                                                           \
  extern "C" __global__ void grid_mask_##T(const T* src, T* dst, const i64* desc, const i64* block_start, \
                                           int n, const float* params) {                               \
    grid_mask_batch<T>(src, dst, desc, block_start, n, params);                                         \
  }
PENSTOCK_GRID_MASK(u8) PENSTOCK_GRID_MASK(i16) PENSTOCK_GRID_MASK(u16) PENSTOCK_GRID_MASK(i32) PENSTOCK_GRID_MASK(f32)
