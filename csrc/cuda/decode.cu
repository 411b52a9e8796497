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
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kVolume]) return;
  i64 C = d[kChannels], row = d[kOutW] * C, y = e / row, r = e - y * row, x = r / C, c = r - x * C;
  const u8* src = reinterpret_cast<const u8*>(d[kSrc]);
  dst[d[kOutOff] + e] = decoded_value<Out>(src[(d[kY0] + y) * d[kPitch] + (d[kX0] + x) * C + (d[kReverse] ? C - 1 - c : c)]);
}

extern "C" __global__ void gather_u8(u8* dst, const i64* desc, const i64* block_start, int n) {
  gather<u8>(dst, desc, block_start, n);
}
extern "C" __global__ void gather_f32(float* dst, const i64* desc, const i64* block_start, int n) {
  gather<float>(dst, desc, block_start, n);
}
