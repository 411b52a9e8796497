// Boxes and points: a per-sample affine map of coordinates (coord_transform, coord_flip and
// bb_flip are all out = M p + T) and SSD box encoding (kernels/boxes.cpp).
//
// Products are rounded on their own (__fmul_rn) where the CPU computes them so, that no fused
// multiply-add moves an IoU across a threshold the CPU's value stays on one side of.

// ---- affine map of points -------------------------------------------------------------------
// Per sample: input offset, output offset, points, matrix index (into `mats`, [dout, d + 1]
// doubles per sample). A thread computes one output coordinate, in double like the CPU.
template <typename In, typename Out>
__device__ void affine_points(const In* src, Out* dst, const i64* desc, const i64* block_start, int n, int d,
                              int dout, const double* mats) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* ds = desc + 4 * s;
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= ds[2] * dout) return;
  i64 p = e / dout;
  int i = int(e - p * dout);
  const double* row = mats + ds[3] * dout * (d + 1) + i * (d + 1);
  const In* x = src + ds[0] + p * d;
  double acc = 0;
  for (int j = 0; j < d; ++j) acc = __dadd_rn(acc, __dmul_rn(row[j], double(x[j])));
  dst[ds[1] + e] = convert_sat<Out, double>(__dadd_rn(acc, row[d]));
}

#define PENSTOCK_AFFINE(I, O)                                                                     \
  extern "C" __global__ void affine_points_##I##_##O(const I* src, O* dst, const i64* desc,       \
                                                     const i64* block_start, int n, int d, int dout, \
                                                     const double* mats) {                        \
    affine_points<I, O>(src, dst, desc, block_start, n, d, dout, mats);                          \
  }
#define PENSTOCK_AFFINE_FROM(I) \
  PENSTOCK_AFFINE(I, u8) PENSTOCK_AFFINE(I, u16) PENSTOCK_AFFINE(I, u32) PENSTOCK_AFFINE(I, u64) \
  PENSTOCK_AFFINE(I, i8) PENSTOCK_AFFINE(I, i16) PENSTOCK_AFFINE(I, i32) PENSTOCK_AFFINE(I, i64) \
  PENSTOCK_AFFINE(I, f32) PENSTOCK_AFFINE(I, f64)
PENSTOCK_AFFINE_FROM(u8) PENSTOCK_AFFINE_FROM(u16) PENSTOCK_AFFINE_FROM(u32) PENSTOCK_AFFINE_FROM(u64)
PENSTOCK_AFFINE_FROM(i8) PENSTOCK_AFFINE_FROM(i16) PENSTOCK_AFFINE_FROM(i32) PENSTOCK_AFFINE_FROM(i64)
PENSTOCK_AFFINE_FROM(f32) PENSTOCK_AFFINE_FROM(f64)

// ---- box_encoder ------------------------------------------------------------------------------
__device__ __forceinline__ float box_iou(const float* a, const float* b) {
  float l = fmaxf(a[0], b[0]), t = fmaxf(a[1], b[1]);
  float r = fminf(a[2], b[2]), btm = fminf(a[3], b[3]);
  if (r <= l || btm <= t) return 0.f;
  float inter = __fmul_rn(r - l, btm - t);
  float ua = __fadd_rn(__fmul_rn(a[2] - a[0], a[3] - a[1]), __fmul_rn(b[2] - b[0], b[3] - b[1])) - inter;
  return ua <= 0.f ? 0.f : inter / ua;
}

// One block per sample. Every box claims its best anchor (ties to the later anchor), then
// every anchor takes its best box (a claimed anchor counts IoU 2; ties to the later box).
// `claimed` is scratch: the anchor each box claims. box_desc: per sample, box offset and count.
extern "C" __global__ void box_encoder(const float* boxes, const i32* labels, const i64* box_desc,
                                       const float* anchors, i64 na, float criteria, int offset, float scale,
                                       const float* means, const float* stds, i64* claimed, float* out_boxes,
                                       i32* out_labels) {
  __shared__ float best_v[256];
  __shared__ i64 best_i[256];
  const int s = blockIdx.x, tid = threadIdx.x;
  const i64 off = box_desc[2 * s], m = box_desc[2 * s + 1];
  const float* b = boxes + off * 4;
  for (i64 k = 0; k < m; ++k) {
    float bv = -1.f;
    i64 bi = 0;
    for (i64 a = tid; a < na; a += blockDim.x) {
      float v = box_iou(b + k * 4, anchors + a * 4);
      if (v >= bv) { bv = v; bi = a; }
    }
    best_v[tid] = bv;
    best_i[tid] = bi;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w >>= 1) {
      if (tid < w) {
        float ov = best_v[tid + w];
        i64 oi = best_i[tid + w];
        if (ov > best_v[tid] || (ov == best_v[tid] && oi > best_i[tid])) { best_v[tid] = ov; best_i[tid] = oi; }
      }
      __syncthreads();
    }
    if (tid == 0) claimed[off + k] = best_i[0];
    __syncthreads();
  }
  for (i64 a = tid; a < na; a += blockDim.x) {
    const float* A = anchors + a * 4;
    float bv = -1.f;
    i64 bk = -1;
    for (i64 k = 0; k < m; ++k) {
      float v = claimed[off + k] == a ? 2.f : box_iou(b + k * 4, A);
      if (v >= bv) { bv = v; bk = k; }
    }
    float acx = 0.5f * (A[0] + A[2]), acy = 0.5f * (A[1] + A[3]), aw = A[2] - A[0], ah = A[3] - A[1];
    float* o = out_boxes + (i64(s) * na + a) * 4;
    if (m > 0 && bv > criteria) {
      const float* B = b + bk * 4;
      float cx = 0.5f * (B[0] + B[2]), cy = 0.5f * (B[1] + B[3]), w = B[2] - B[0], h = B[3] - B[1];
      if (offset) {
        o[0] = ((__fmul_rn(cx, scale) - __fmul_rn(acx, scale)) / __fmul_rn(aw, scale) - means[0]) / stds[0];
        o[1] = ((__fmul_rn(cy, scale) - __fmul_rn(acy, scale)) / __fmul_rn(ah, scale) - means[1]) / stds[1];
        o[2] = (logf(__fmul_rn(w, scale) / __fmul_rn(aw, scale)) - means[2]) / stds[2];
        o[3] = (logf(__fmul_rn(h, scale) / __fmul_rn(ah, scale)) - means[3]) / stds[3];
      } else {
        o[0] = cx; o[1] = cy; o[2] = w; o[3] = h;
      }
      out_labels[i64(s) * na + a] = labels[off + bk];
    } else {
      if (offset) {
        o[0] = o[1] = o[2] = o[3] = 0.f;
      } else {
        o[0] = acx; o[1] = acy; o[2] = aw; o[3] = ah;
      }
      out_labels[i64(s) * na + a] = 0;
    }
  }
}
