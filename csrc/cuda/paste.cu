// multi_paste (kernels/paste.cpp): one thread per output element, which takes the value of the last
// region (in paste order) that covers it, converted as convert_sat does, or zero. Regions are
// [R, 10] int64 (input batch, source sample offset, source H and W, source anchor y x, output
// anchor y x, region h w); the input batches are reached through a table of device addresses.
enum PasteDesc { kPOutOff, kPVolume, kPH, kPW, kPC, kPFirst, kPLast, kPDesc = 7 };
enum RegionField { kRBatch, kRSrcOffset, kRSrcH, kRSrcW, kRInY, kRInX, kROutY, kROutX, kRH, kRW, kRFields };

template <typename In, typename Out>
__device__ void multi_paste_kernel(Out* dst, const i64* desc, const i64* block_start, int n, const u64* sources,
                                   const i64* regions) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kPDesc;
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kPVolume]) return;
  const i64 c = d[kPC], w = d[kPW], h = d[kPH];
  const i64 ch = e % c, x = (e / c) % w, y = (e / (c * w)) % h, f = e / (c * w * h);
  Out v = Out(0);
  for (i64 r = d[kPLast] - 1; r >= d[kPFirst]; --r) {
    const i64* g = regions + r * kRFields;
    i64 ry = y - g[kROutY], rx = x - g[kROutX];
    if (ry < 0 || rx < 0 || ry >= g[kRH] || rx >= g[kRW]) continue;
    const In* src = reinterpret_cast<const In*>(sources[g[kRBatch]]) + g[kRSrcOffset];
    v = convert_sat<Out, In>(src[((f * g[kRSrcH] + g[kRInY] + ry) * g[kRSrcW] + g[kRInX] + rx) * c + ch]);
    break;
  }
  dst[d[kPOutOff] + e] = v;
}

#define PENSTOCK_MULTI_PASTE(I, O)                                                                                \
  extern "C" __global__ void multi_paste_##I##_##O(O* dst, const i64* desc, const i64* block_start, int n,      \
                                                   const u64* sources, const i64* regions) {                     \
    multi_paste_kernel<I, O>(dst, desc, block_start, n, sources, regions);                                       \
  }
#define PENSTOCK_MULTI_PASTE_FROM(I) \
  PENSTOCK_MULTI_PASTE(I, u8) PENSTOCK_MULTI_PASTE(I, i16) PENSTOCK_MULTI_PASTE(I, u16) PENSTOCK_MULTI_PASTE(I, i32) \
  PENSTOCK_MULTI_PASTE(I, f32)
PENSTOCK_MULTI_PASTE_FROM(u8) PENSTOCK_MULTI_PASTE_FROM(i16) PENSTOCK_MULTI_PASTE_FROM(u16)
PENSTOCK_MULTI_PASTE_FROM(i32) PENSTOCK_MULTI_PASTE_FROM(f32)
