// Separable resize of channel-last frames [H, W, C] on the GPU, the CPU kernel's algorithm
// (kernels/resize.cpp): a vertical pass into a float buffer over the source columns the
// horizontal taps read, then a horizontal pass rounded into the output. The taps (first source
// index, count and weights per output pixel) are computed by `resize_taps` below with the CPU's
// arithmetic (kernels/resize_filters.h), in double precision.
//
// One launch per pass for the whole batch; each frame has a descriptor of kDesc int64 fields.
// Per output pixel of an axis: starts[] (first source index), counts[] and weights[] at a fixed
// stride (the axis's most taps) from the axis's offsets.
enum ResizeDesc {
  kInOff, kOutOff, kTmpOff, kInW, kChannels, kOutH, kOutW, kColLo, kSpan,
  kTapsY, kStartY, kWeightY, kTapsX, kStartX, kWeightX, kDesc = 16
};

// ---- taps (resize_filters.h's make_axis_filter, one thread per output pixel of an axis) ----------
enum InterpType { kNN = 0, kLinear = 1, kCubic = 2, kLanczos3 = 3, kTriangular = 4, kGaussian = 5 };
enum AxisDesc { kAxIn, kAxOut, kAxMinF, kAxMagF, kAxMaxTaps, kAxStart, kAxWeight, kAxDesc = 8 };
constexpr int kMaxGpuTaps = 128;  // wider filters (extreme downscaling) are planned on the host

__device__ double filter_radius(int type) {
  switch (type) {
    case kLinear: case kTriangular: return 1.0;
    case kCubic: return 2.0;
    case kLanczos3: return 3.0;
    default: return 1.5;  // gaussian
  }
}

__device__ double filter_value(int type, double d) {
  double a = fabs(d);
  switch (type) {
    case kLinear: case kTriangular: return a < 1 ? 1 - a : 0;
    case kCubic:
      if (a < 1) return (1.5 * a - 2.5) * a * a + 1;
      if (a < 2) return ((-0.5 * a + 2.5) * a - 4) * a + 2;
      return 0;
    case kLanczos3: {
      if (a >= 3) return 0;
      if (a < 1e-9) return 1;
      double x = 3.14159265358979323846 * a;
      return 3 * sin(x) * sin(x / 3) / (x * x);
    }
    default: return a < 1.5 ? exp(-4 * a * a) : 0;
  }
}

extern "C" __global__ void resize_taps(const i64* axes, const i64* block_start, int n_axes, const double* rois,
                                       int antialias, i32* starts, i32* counts, float* weights) {
  int k = find_sample(block_start, n_axes, blockIdx.x);
  const i64* a = axes + k * kAxDesc;
  i64 j = (i64(blockIdx.x) - block_start[k]) * blockDim.x + threadIdx.x;
  i64 in = a[kAxIn], out = a[kAxOut], max_taps = a[kAxMaxTaps];
  if (j >= out) return;
  i32* start = starts + a[kAxStart] + j;
  i32* count = counts + a[kAxStart] + j;
  float* w = weights + a[kAxWeight] + j * max_taps;
  double roi_start = rois[2 * k], step = (rois[2 * k + 1] - roi_start) / double(out), scale = fabs(step);
  int type = int(scale > 1 ? a[kAxMinF] : a[kAxMagF]);
  if (type == kNN) {
    double x = floor(roi_start + (j + 0.5) * step + 1e-7);
    *start = i32(x < 0 ? 0 : (x > double(in - 1) ? double(in - 1) : x));
    *count = 1;
    w[0] = 1.f;
    return;
  }
  bool stretch_always = type == kTriangular || type == kGaussian;
  double stretch = scale > 1 && (antialias || stretch_always) ? scale : 1.0;
  double radius = filter_radius(type) * stretch;
  double c = roi_start + (j + 0.5) * step - 0.5;
  i64 lo = i64(ceil(c - radius)), hi = i64(floor(c + radius));
  i64 clo = lo < 0 ? 0 : (lo > in - 1 ? in - 1 : lo), chi = hi < 0 ? 0 : (hi > in - 1 ? in - 1 : hi);
  i64 n = chi - clo + 1 < max_taps ? chi - clo + 1 : max_taps;
  double acc[kMaxGpuTaps];
  for (i64 t = 0; t < n; ++t) acc[t] = 0;
  double sum = 0;
  for (i64 t = lo; t <= hi; ++t) {
    double v = filter_value(type, (t - c) / stretch);
    if (v == 0) continue;
    i64 idx = t < clo ? clo : (t > clo + n - 1 ? clo + n - 1 : t);
    acc[idx - clo] += v;
    sum += v;
  }
  if (sum == 0) {  // degenerate: the nearest pixel
    for (i64 t = 0; t < n; ++t) acc[t] = 0;
    i64 near = i64(floor(c + 0.5));
    near = near < clo ? clo : (near > clo + n - 1 ? clo + n - 1 : near);
    acc[near - clo] = 1;
    sum = 1;
  }
  i64 b = 0, e = n;  // trim zero taps at both ends
  while (b < e - 1 && acc[b] == 0) ++b;
  while (e > b + 1 && acc[e - 1] == 0) --e;
  *start = i32(clo + b);
  *count = i32(e - b);
  for (i64 t = b; t < e; ++t) w[t - b] = float(acc[t] / sum);
}

template <typename In>
__device__ void resize_vertical(const In* src, float* tmp, const i64* desc, const i64* block_start, int frames,
                                const i32* starts, const i32* counts, const float* weights) {
  int f = find_sample(block_start, frames, blockIdx.x);
  const i64* d = desc + f * kDesc;
  const i64 row = d[kSpan] * d[kChannels], volume = d[kOutH] * row, stride = d[kInW] * d[kChannels];
  const i64 start_y = d[kStartY], taps_y = d[kTapsY], tmp_off = d[kTmpOff];
  const In* base = src + d[kInOff] + d[kColLo] * d[kChannels];
  const float* weights_y = weights + d[kWeightY];
  for_items(block_start, f, volume, [&](i64 e, auto i) {
    using I = decltype(i);
    I y = i / I(row), xc = i - y * I(row);
    i32 taps = counts[start_y + y];
    const float* w = weights_y + y * taps_y;
    const In* p = base + i64(starts[start_y + y]) * stride + xc;
    float acc = w[0] * to_float(p[0]);
    i32 k = 1;
    for (; k + 1 < taps; k += 2)  // pairs, as the CPU kernel sums them
      acc += w[k] * to_float(p[k * stride]) + w[k + 1] * to_float(p[(k + 1) * stride]);
    if (k < taps) acc += w[k] * to_float(p[k * stride]);
    tmp[tmp_off + e] = acc;
  });
}

// Output pixel (y, x, c)'s horizontal taps over the vertical pass's rows (`base`, `span` floats a
// row from source column `col_lo`), as resize_h and the normalizing pass below both sum them.
__device__ __forceinline__ float horizontal_taps(const float* base, const float* weights_x, const i32* starts,
                                                 const i32* counts, i64 y, i64 x, i64 c, i64 C, i64 span,
                                                 i64 start_x, i64 taps_x, i64 col_lo) {
  const i32 taps = counts[start_x + x];
  const float* w = weights_x + x * taps_x;
  const float* p = base + y * span + (i64(starts[start_x + x]) - col_lo) * C + c;
  float acc = p[0] * w[0];
  for (i32 k = 1; k < taps; ++k) acc += p[k * C] * w[k];
  return acc;
}

template <typename Out>
__device__ void resize_horizontal(const float* tmp, Out* dst, const i64* desc, const i64* block_start, int frames,
                                  const i32* starts, const i32* counts, const float* weights) {
  int f = find_sample(block_start, frames, blockIdx.x);
  const i64* d = desc + f * kDesc;
  const i64 C = d[kChannels], row = d[kOutW] * C, volume = d[kOutH] * row, span = d[kSpan] * C;
  const i64 start_x = d[kStartX], taps_x = d[kTapsX], col_lo = d[kColLo], out_off = d[kOutOff];
  const float* base = tmp + d[kTmpOff];
  const float* weights_x = weights + d[kWeightX];
  for_items(block_start, f, volume, [&](i64 e, auto i) {
    using I = decltype(i);
    I y = i / I(row), r = i - y * I(row), x = r / I(C), c = r - x * I(C);
    dst[out_off + e] = pixel_from<Out>(horizontal_taps(base, weights_x, starts, counts, y, x, c, C, span, start_x,
                                                       taps_x, col_lo));
  });
}

// The horizontal pass feeding crop_mirror_normalize (a GPU resize whose only reader is one, run as
// one operator: operators/_resize_normalize.py). A resized pixel inside its sample's crop window is
// rounded to the resize's output type Mid, as resize_h stores it, then normalized as
// crop_mirror_normalize's kernel does and stored at its place in that operator's output: the
// resized batch is never written. Pixels outside the window are not computed. Per frame (a sample:
// images only) a row of kWinDesc: where its output starts, the window (the resized image's pixels
// it covers), whether it is mirrored, the output's channels and where they go (0: CHW, 1: HCW,
// 2: HWC); and a row of `norm`: the shift, the output channels' fill values, the frame's means and
// its scaled inverse deviations (1 + channels out + 2 C floats).
enum WindowDesc { kWinOut, kWinY, kWinX, kWinH, kWinW, kWinMirror, kWinChannels, kWinChannelDim, kWinDesc = 8 };

template <typename Mid, typename Out>
__device__ void resize_horizontal_normalized(const float* tmp, Out* dst, const i64* desc, const i64* block_start,
                                             int frames, const i32* starts, const i32* counts, const float* weights,
                                             const i64* windows, const float* norm) {
  int f = find_sample(block_start, frames, blockIdx.x);
  const i64* d = desc + f * kDesc;
  const i64* win = windows + f * kWinDesc;
  const i64 C = d[kChannels], row = d[kOutW] * C, volume = d[kOutH] * row, span = d[kSpan] * C;
  const i64 start_x = d[kStartX], taps_x = d[kTapsX], col_lo = d[kColLo];
  const i64 wy0 = win[kWinY], wx0 = win[kWinX], wh = win[kWinH], ww = win[kWinW], cout = win[kWinChannels];
  const int cdim = int(win[kWinChannelDim]);
  const bool mirror = win[kWinMirror] != 0;
  const float* base = tmp + d[kTmpOff];
  const float* weights_x = weights + d[kWeightX];
  const float* norm_row = norm + f * (1 + cout + 2 * C);
  const float shift = norm_row[0];
  const float* fill = norm_row + 1;
  const float* mean = fill + cout;
  const float* inv_std = mean + C;
  Out* out = dst + win[kWinOut];
  // the output's strides of a window row, a window column and a channel
  const i64 s_c = cdim == 0 ? wh * ww : (cdim == 1 ? ww : 1);
  const i64 s_y = cdim == 0 ? ww : (cdim == 1 ? cout * ww : ww * cout);
  const i64 s_x = cdim == 2 ? cout : 1;
  for_items(block_start, f, volume, [&](i64 e, auto i) {
    using I = decltype(i);
    I y = i / I(row), r = i - y * I(row), x = r / I(C), c = r - x * I(C);
    const i64 wy = i64(y) - wy0;
    i64 wx = i64(x) - wx0;
    if (wy < 0 || wy >= wh || wx < 0 || wx >= ww) return;
    if (mirror) wx = ww - 1 - wx;
    const float acc = horizontal_taps(base, weights_x, starts, counts, y, x, c, C, span, start_x, taps_x, col_lo);
    const float v = (to_float(pixel_from<Mid>(acc)) - mean[c]) * inv_std[c] + shift;
    const i64 at = wy * s_y + wx * s_x + i64(c) * s_c;
    out[at] = pixel_from<Out>(v);
    if (c == C - 1)  // the pad_output channel, if any
      for (i64 extra = C; extra < cout; ++extra) out[wy * s_y + wx * s_x + extra * s_c] = pixel_from<Out>(fill[extra]);
  });
}

#define PENSTOCK_RESIZE_NORMALIZED(M, O)                                                                    \
  extern "C" __global__ void resize_h_##M##_cmn_##O(const float* tmp, O* dst, const i64* desc,              \
                                                    const i64* block_start, int frames, const i32* starts,  \
                                                    const i32* counts, const float* weights,                \
                                                    const i64* windows, const float* norm) {                \
    resize_horizontal_normalized<M, O>(tmp, dst, desc, block_start, frames, starts, counts, weights, windows, \
                                       norm);                                                               \
  }
#define PENSTOCK_RESIZE_NORMALIZED_MID(M) \
  PENSTOCK_RESIZE_NORMALIZED(M, u8) PENSTOCK_RESIZE_NORMALIZED(M, i8) PENSTOCK_RESIZE_NORMALIZED(M, f16) \
  PENSTOCK_RESIZE_NORMALIZED(M, f32)
PENSTOCK_RESIZE_NORMALIZED_MID(u8)
PENSTOCK_RESIZE_NORMALIZED_MID(i16)
PENSTOCK_RESIZE_NORMALIZED_MID(u16)
PENSTOCK_RESIZE_NORMALIZED_MID(f32)

#define PENSTOCK_RESIZE(T)                                                                              \
  extern "C" __global__ void resize_v_##T(const T* src, float* tmp, const i64* desc, const i64* block_start, \
                                          int frames, const i32* starts, const i32* counts,              \
                                          const float* weights) {                                        \
    resize_vertical<T>(src, tmp, desc, block_start, frames, starts, counts, weights);                   \
  }                                                                                                     \
  extern "C" __global__ void resize_h_##T(const float* tmp, T* dst, const i64* desc, const i64* block_start, \
                                          int frames, const i32* starts, const i32* counts,              \
                                          const float* weights) {                                        \
    resize_horizontal<T>(tmp, dst, desc, block_start, frames, starts, counts, weights);                 \
  }
PENSTOCK_RESIZE(u8)
PENSTOCK_RESIZE(i16)
PENSTOCK_RESIZE(u16)
PENSTOCK_RESIZE(f32)
