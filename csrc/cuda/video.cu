// video (operators/_video_nvdec.py): frames decoded by NVDEC to interleaved RGB, every frame of a
// batch in one launch, one thread per output pixel. NVDEC's 4:2:0 surfaces (NVIDIA's NV12 for
// 8-bit video, P016 for 10/12-bit: 16-bit samples, the value in the high bits) are a luma plane
// of `luma_rows` rows, then a plane of interleaved Cb/Cr at half resolution, every row `pitch`
// bytes apart. The chroma plane starts after the surface's rows, not the frame's: a surface may
// be taller (coded height, or aligned) and wider (pitch) than the frame shown, whose pixels are
// its top-left `height` x `width`. Samples are taken in 8-bit levels (a P016 sample / 256), chroma
// is upsampled bilinearly from sample positions centred between the luma samples, then BT.601
// applied for the frame's range (limited: luma 16..235, as H.264/HEVC/VP9/AV1 streams are coded
// unless they say otherwise; full: JPEG's), as the CPU's csrc/kernels/video.cpp does. A frame
// without a source (padding) takes the fill colour.
enum VideoDesc { kVSrc, kVDst, kVWidth, kVHeight, kVPitch, kVPixels, kVFullRange, kVFill, kVLumaRows, kVSampleBytes,
                 kVDesc = 10 };

__device__ __forceinline__ u8 to_u8(float v) { return u8(fminf(fmaxf(v + 0.5f, 0.f), 255.f)); }

// sample i of a row, in 8-bit levels
__device__ __forceinline__ float level(const u8* row, i64 i, bool wide) {
  return wide ? float(reinterpret_cast<const u16*>(row)[i]) * (1.f / 256.f) : float(row[i]);
}

extern "C" __global__ void nv12_to_rgb(const i64* desc, const i64* block_start, int n) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kVDesc;
  i64 p = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (p >= d[kVPixels]) return;
  u8* dst = reinterpret_cast<u8*>(d[kVDst]) + p * 3;
  if (d[kVSrc] == 0) {
    i64 fill = d[kVFill];
    dst[0] = u8(fill & 255); dst[1] = u8((fill >> 8) & 255); dst[2] = u8((fill >> 16) & 255);
    return;
  }
  const i64 width = d[kVWidth], height = d[kVHeight], pitch = d[kVPitch];
  const bool wide = d[kVSampleBytes] == 2;
  const i64 y = p / width, x = p - y * width, cw = (width + 1) / 2, ch = (height + 1) / 2;
  const u8* src = reinterpret_cast<const u8*>(d[kVSrc]);
  const u8* uv = src + d[kVLumaRows] * pitch;
  const float cy = (y + 0.5f) * 0.5f - 0.5f, cx = (x + 0.5f) * 0.5f - 0.5f;
  const i64 r0 = cy < 0.f ? 0 : min(i64(cy), ch - 1), r1 = min(r0 + 1, ch - 1);
  const i64 c0 = cx < 0.f ? 0 : min(i64(cx), cw - 1), c1 = min(c0 + 1, cw - 1);
  const float fy = cy < 0.f ? 0.f : cy - floorf(cy), fx = cx < 0.f ? 0.f : cx - floorf(cx);
  float chroma[2];
  for (int c = 0; c < 2; ++c) {
    const u8* a = uv + r0 * pitch;
    const u8* b = uv + r1 * pitch;
    const float a0 = level(a, c0 * 2 + c, wide), a1 = level(a, c1 * 2 + c, wide);
    const float b0 = level(b, c0 * 2 + c, wide), b1 = level(b, c1 * 2 + c, wide);
    const float top = a0 + (a1 - a0) * fx, bottom = b0 + (b1 - b0) * fx;
    chroma[c] = top + (bottom - top) * fy - 128.f;
  }
  const float cb = chroma[0], cr = chroma[1];
  float luma = level(src + y * pitch, x, wide), r, g, b;
  if (d[kVFullRange]) {
    r = luma + 1.402f * cr;
    g = luma - 0.344136f * cb - 0.714136f * cr;
    b = luma + 1.772f * cb;
  } else {
    luma = 1.164383f * (luma - 16.f);
    r = luma + 1.596027f * cr;
    g = luma - 0.391762f * cb - 0.812968f * cr;
    b = luma + 2.017232f * cb;
  }
  dst[0] = to_u8(r); dst[1] = to_u8(g); dst[2] = to_u8(b);
}
