// Gathers decoded images into one packed HWC batch: each source is a uint8 HWC image anywhere
// in device memory (its own row pitch), from which a window is copied, optionally with the
// channel order reversed (RGB -> BGR, per sample) and converted to float (v / 255, as the CPU decoder does).
enum GatherDesc { kSrc, kPitch, kY0, kX0, kOutOff, kOutW, kVolume, kChannels, kReverse, kDesc = 10 };

template <typename Out>
__device__ __forceinline__ Out decoded_value(u8 v);
template <> __device__ __forceinline__ u8 decoded_value<u8>(u8 v) { return v; }
template <> __device__ __forceinline__ float decoded_value<float>(u8 v) { return float(v) / 255.0f; }

template <typename Out>
__device__ void gather(Out* dst, const i64* desc, const i64* block_start, int n) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kDesc;
  const i64 volume = d[kVolume], pitch = d[kPitch], y0 = d[kY0], x0 = d[kX0], out_off = d[kOutOff];
  const i64 channels = d[kChannels], width = d[kOutW];
  const bool reverse = d[kReverse] != 0;
  const u8* src = reinterpret_cast<const u8*>(d[kSrc]);
  for_items(block_start, s, volume, [&](i64 e, auto i) {
    using I = decltype(i);
    I C = I(channels), row = I(width) * C, y = i / row, r = i - y * row, x = r / C, c = r - x * C;
    dst[out_off + e] = decoded_value<Out>(src[(y0 + y) * pitch + (x0 + x) * C + (reverse ? C - 1 - c : c)]);
  });
}

extern "C" __global__ void gather_u8(u8* dst, const i64* desc, const i64* block_start, int n) {
  gather<u8>(dst, desc, block_start, n);
}
extern "C" __global__ void gather_f32(float* dst, const i64* desc, const i64* block_start, int n) {
  gather<float>(dst, desc, block_start, n);
}
