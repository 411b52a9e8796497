// Per-pixel affine colour transform (kernels/color.cpp): out[o] = sum_c M[o][c] * in[c] + M[o][ci],
// one [co, ci + 1] matrix per sample; one thread per pixel.
enum ColorDesc { kInOff, kOutOff, kPixels, kDesc = 4 };

template <typename In, typename Out>
__device__ void color_matrix(const In* src, Out* dst, const i64* desc, const i64* block_start, int n, int ci,
                             int co, const float* matrices) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kDesc;
  i64 p = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (p >= d[kPixels]) return;
  const In* in = src + d[kInOff] + p * ci;
  Out* out = dst + d[kOutOff] + p * co;
  const float* m = matrices + i64(s) * co * (ci + 1);
  for (int o = 0; o < co; ++o) {
    const float* row = m + o * (ci + 1);
    float a = row[ci];
    for (int c = 0; c < ci; ++c) a += row[c] * to_float(in[c]);
    out[o] = pixel_from<Out>(a);
  }
}

#define PENSTOCK_COLOR(I, O)                                                                            \
  extern "C" __global__ void color_matrix_##I##_##O(const I* src, O* dst, const i64* desc,            \
                                                    const i64* block_start, int n, int ci, int co,    \
                                                    const float* matrices) {                          \
    color_matrix<I, O>(src, dst, desc, block_start, n, ci, co, matrices);                             \
  }
#define PENSTOCK_COLOR_IN(I) \
  PENSTOCK_COLOR(I, u8) PENSTOCK_COLOR(I, i16) PENSTOCK_COLOR(I, u16) PENSTOCK_COLOR(I, i32) PENSTOCK_COLOR(I, f32)
PENSTOCK_COLOR_IN(u8) PENSTOCK_COLOR_IN(i16) PENSTOCK_COLOR_IN(u16) PENSTOCK_COLOR_IN(i32) PENSTOCK_COLOR_IN(f32)
