// Demosaicing of Bayer frames (kernels/debayer.cpp): one thread per pixel, OpenCV's bilinear
// averages (or grey weights) of the inner pixel nearest to it; outer rows and columns repeat
// their inner neighbours'.
enum DebayerDesc { kBIn, kBOut, kBPixels, kBH, kBW, kBBlueY, kBBlueX, kBDesc = 7 };

__device__ __forceinline__ i64 debayer_descale(i64 v, int bits) { return (v + (i64(1) << (bits - 1))) >> bits; }

template <typename T>
__device__ void debayer_kernel(const T* src, T* dst, const i64* desc, const i64* block_start, int n, int grey) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kBDesc;
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kBPixels]) return;
  const i64 h = d[kBH], w = d[kBW], channels = grey ? 1 : 3;
  const i64 xo = e % w, yo = (e / w) % h, f = e / (w * h);
  const i64 y = yo < 1 ? 1 : (yo > h - 2 ? h - 2 : yo), x = xo < 1 ? 1 : (xo > w - 2 ? w - 2 : xo);
  const T* in = src + d[kBIn] + f * h * w;
  T* out = dst + d[kBOut] + e * channels;
  const int by = int(d[kBBlueY]), bx = int(d[kBBlueX]);
  const bool blue = (y & 1) == ((1 + by) & 1) && (x & 1) == ((1 + bx) & 1);
  const bool red = (y & 1) == (by & 1) && (x & 1) == (bx & 1);
  const bool red_row = (y & 1) == (by & 1);
  const i64 c = in[y * w + x];
  const i64 hor = i64(in[y * w + x - 1]) + in[y * w + x + 1], ver = i64(in[(y - 1) * w + x]) + in[(y + 1) * w + x];
  const i64 diag = i64(in[(y - 1) * w + x - 1]) + in[(y - 1) * w + x + 1] + in[(y + 1) * w + x - 1] +
                   in[(y + 1) * w + x + 1];
  if (grey) {
    const i64 r2y = 4899, g2y = 9617, b2y = 1868;
    if (blue) out[0] = T(debayer_descale(diag * r2y + (hor + ver) * g2y + c * 4 * b2y, 16));
    else if (red) out[0] = T(debayer_descale(diag * b2y + (hor + ver) * g2y + c * 4 * r2y, 16));
    else out[0] = T(debayer_descale((red_row ? hor : ver) * r2y + (red_row ? ver : hor) * b2y + c * 2 * g2y, 15));
    return;
  }
  const i64 cross = (hor + ver + 2) >> 2, corners = (diag + 2) >> 2;
  if (blue) {
    out[0] = T(corners); out[1] = T(cross); out[2] = T(c);
  } else if (red) {
    out[0] = T(c); out[1] = T(cross); out[2] = T(corners);
  } else {
    const i64 h2 = (hor + 1) >> 1, v2 = (ver + 1) >> 1;
    out[0] = T(red_row ? h2 : v2); out[1] = T(c); out[2] = T(red_row ? v2 : h2);
  }
}

#define PENSTOCK_DEBAYER(T)                                                                                    \
  extern "C" __global__ void debayer_##T(const T* src, T* dst, const i64* desc, const i64* block_start, int n, \
                                         int grey) {                                                          \
    debayer_kernel<T>(src, dst, desc, block_start, n, grey);                                                  \
  }
PENSTOCK_DEBAYER(u8) PENSTOCK_DEBAYER(u16)
