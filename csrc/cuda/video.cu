// video (operators/_video_nvdec.py): frames decoded by NVDEC (NV12: a luma plane, then a plane of
// interleaved Cb/Cr at half resolution, rows `pitch` bytes apart) to interleaved RGB, every frame
// of a batch in one launch, one thread per output pixel. Chroma is taken from the 2x2 block the
// pixel lies in, and the BT.601 matrix of the frame's range applied (limited: Y in 16..235, as
// H.264/HEVC/VP9/AV1 streams are coded unless they say otherwise; full: JPEG's), as libswscale's
// unscaled converter does on the CPU. A frame without a source (padding) takes the fill colour.
enum VideoDesc { kVSrc, kVDst, kVWidth, kVHeight, kVPitch, kVPixels, kVFullRange, kVFill, kVDesc = 8 };

// truncated, as libswscale's tables do: the CPU and GPU paths then agree within a level or two
__device__ __forceinline__ u8 to_u8(float v) { return u8(fminf(fmaxf(v, 0.f), 255.f)); }

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
  const i64 width = d[kVWidth], pitch = d[kVPitch];
  const i64 y = p / width, x = p - y * width;
  const u8* src = reinterpret_cast<const u8*>(d[kVSrc]);
  const u8* uv = src + d[kVHeight] * pitch + (y >> 1) * pitch + (x >> 1) * 2;
  float luma = float(src[y * pitch + x]), cb = float(uv[0]) - 128.f, cr = float(uv[1]) - 128.f;
  float r, g, b;
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
