// Fused crop + horizontal mirror + (x - mean) * (scale / std) + shift + channel move + type
// conversion (kernels/crop_mirror_normalize.cpp), kItems output elements per thread. Input samples
// are channel-last with nd dims; the output has the channel at `cdim` and `cout` channels
// (C, or C + 1 with pad_output: the extra channel is fill[C] everywhere). Window parts outside the
// input take fill[c] as the output value.
enum CmnDesc { kInOff, kOutOff, kMirror, kVolume, kInShape = 4, kAnchor = 12, kWin = 20, kDesc = 28 };

template <typename In, typename Out>
__device__ void cmn(const In* src, Out* dst, const i64* desc, const i64* block_start, int n, int nd, int C,
                    int cout, int cdim, const float* mean, const float* inv_std, float shift, const float* fill) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kDesc;
  for_items(block_start, s, d[kVolume], [&](i64 e, auto i) {
    using I = decltype(i);
    // output coordinates, last dim first; k counts the window (non-channel) dims from the end
    I rem = i;
    i64 src_off = 0, in_stride = C;
    int c = 0, k = nd - 2;
    bool inside = true;
    for (int dim = nd - 1; dim >= 0; --dim) {
      if (dim == cdim) {
        c = int(rem % I(cout));
        rem /= I(cout);
        continue;
      }
      I w = I(d[kWin + k]);
      I x = rem % w;
      rem /= w;
      i64 sx = window_source(d[kAnchor + k], d[kWin + k], d[kInShape + k], k == nd - 2 && d[kMirror] != 0, i64(x));
      inside = inside && sx >= 0;
      src_off += sx * in_stride;
      in_stride *= d[kInShape + k];
      --k;
    }
    float v;
    if (c >= C || !inside) v = fill[c];
    else v = (to_float(src[d[kInOff] + src_off + c]) - mean[s * C + c]) * inv_std[s * C + c] + shift;
    dst[d[kOutOff] + e] = pixel_from<Out>(v);
  });
}

#define PENSTOCK_CMN(I, O)                                                                              \
  extern "C" __global__ void cmn_##I##_##O(const I* src, O* dst, const i64* desc, const i64* block_start, \
                                           int n, int nd, int C, int cout, int cdim, const float* mean, \
                                           const float* inv_std, float shift, const float* fill) {      \
    cmn<I, O>(src, dst, desc, block_start, n, nd, C, cout, cdim, mean, inv_std, shift, fill);           \
  }
#define PENSTOCK_CMN_IN(I) \
  PENSTOCK_CMN(I, u8) PENSTOCK_CMN(I, i8) PENSTOCK_CMN(I, i16) PENSTOCK_CMN(I, i32) PENSTOCK_CMN(I, f16) PENSTOCK_CMN(I, f32)
PENSTOCK_CMN_IN(u8)
PENSTOCK_CMN_IN(i16)
PENSTOCK_CMN_IN(u16)
PENSTOCK_CMN_IN(f32)
