// Separable resize of channel-last frames [H, W, C] on the GPU, the CPU kernel's algorithm
// (kernels/resize.cpp): a vertical pass into a float buffer over the source columns the
// horizontal taps read, then a horizontal pass rounded into the output. The taps (first source
// index and weights per output pixel) are the CPU's own, computed on the host
// (`_engine.resize_taps`), so both devices sample identically.
//
// One launch per pass for the whole batch; each frame has a descriptor of kDesc int64 fields.
enum ResizeDesc {
  kInOff, kOutOff, kTmpOff, kInW, kChannels, kOutH, kOutW, kColLo, kSpan,
  kTapsY, kStartY, kWeightY, kTapsX, kStartX, kWeightX, kDesc = 16
};

template <typename In>
__device__ void resize_vertical(const In* src, float* tmp, const i64* desc, const i64* block_start, int frames,
                                const i32* starts, const float* weights) {
  int f = find_sample(block_start, frames, blockIdx.x);
  const i64* d = desc + f * kDesc;
  i64 e = (i64(blockIdx.x) - block_start[f]) * blockDim.x + threadIdx.x;
  i64 row = d[kSpan] * d[kChannels];
  if (e >= d[kOutH] * row) return;
  i64 y = e / row, xc = e - y * row;
  i64 stride = d[kInW] * d[kChannels];
  i32 taps = i32(d[kTapsY]);
  const float* w = weights + d[kWeightY] + y * taps;
  const In* p = src + d[kInOff] + i64(starts[d[kStartY] + y]) * stride + d[kColLo] * d[kChannels] + xc;
  float acc = w[0] * to_float(p[0]);
  i32 k = 1;
  for (; k + 1 < taps; k += 2)  // pairs, as the CPU kernel sums them
    acc += w[k] * to_float(p[k * stride]) + w[k + 1] * to_float(p[(k + 1) * stride]);
  if (k < taps) acc += w[k] * to_float(p[k * stride]);
  tmp[d[kTmpOff] + e] = acc;
}

template <typename Out>
__device__ void resize_horizontal(const float* tmp, Out* dst, const i64* desc, const i64* block_start, int frames,
                                  const i32* starts, const float* weights) {
  int f = find_sample(block_start, frames, blockIdx.x);
  const i64* d = desc + f * kDesc;
  i64 e = (i64(blockIdx.x) - block_start[f]) * blockDim.x + threadIdx.x;
  i64 C = d[kChannels], row = d[kOutW] * C;
  if (e >= d[kOutH] * row) return;
  i64 y = e / row, r = e - y * row, x = r / C, c = r - x * C;
  i32 taps = i32(d[kTapsX]);
  const float* w = weights + d[kWeightX] + x * taps;
  const float* p = tmp + d[kTmpOff] + y * d[kSpan] * C + (i64(starts[d[kStartX] + x]) - d[kColLo]) * C + c;
  float acc = p[0] * w[0];
  for (i32 k = 1; k < taps; ++k) acc += p[k * C] * w[k];
  dst[d[kOutOff] + e] = pixel_from<Out>(acc);
}

#define PENSTOCK_RESIZE(T)                                                                              \
  extern "C" __global__ void resize_v_##T(const T* src, float* tmp, const i64* desc, const i64* block_start, \
                                          int frames, const i32* starts, const float* weights) {        \
    resize_vertical<T>(src, tmp, desc, block_start, frames, starts, weights);                           \
  }                                                                                                     \
  extern "C" __global__ void resize_h_##T(const float* tmp, T* dst, const i64* desc, const i64* block_start, \
                                          int frames, const i32* starts, const float* weights) {        \
    resize_horizontal<T>(tmp, dst, desc, block_start, frames, starts, weights);                         \
  }
PENSTOCK_RESIZE(u8)
PENSTOCK_RESIZE(i16)
PENSTOCK_RESIZE(u16)
PENSTOCK_RESIZE(f32)
