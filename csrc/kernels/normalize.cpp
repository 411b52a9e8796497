// normalize (operators/normalize.py): out = (x - mean) / stddev * scale + shift in double, written as
// float, the batch in one call. Same signature and results as GpuKernels.normalize
// (csrc/cuda/normalize.cu): the float64 statistics of sample i are read at offsets[i] plus the
// element's index along each axis times strides[i] (0 on a reduced axis), so one kernel serves
// computed, given scalar and given per-sample statistics.
#include <algorithm>
#include <vector>

#include "kernels/normalize.h"
#include "kernels/numeric.h"

namespace penstock {
namespace {

constexpr int kMaxDims = 32;
constexpr int64_t kGrain = 1 << 15;  // elements per work item

// One sample's axes with extent-1 ones dropped and neighbours merged where both statistics step
// through them as one axis.
struct NormPlan {
  int64_t src_off = 0, dst_off = 0, volume = 1, mean_off = 0, std_off = 0;
  int nd = 0;
  int64_t ext[kMaxDims], ms[kMaxDims], ss[kMaxDims];
};

NormPlan plan_sample(const int64_t* shape, const int64_t* mstr, const int64_t* sstr, int nd) {
  NormPlan p;
  for (int d = 0; d < nd; ++d) {
    p.volume *= shape[d];
    if (shape[d] == 1) continue;
    int k = p.nd - 1;
    if (k >= 0 && p.ms[k] == shape[d] * mstr[d] && p.ss[k] == shape[d] * sstr[d]) {
      p.ext[k] *= shape[d];
      p.ms[k] = mstr[d];
      p.ss[k] = sstr[d];
    } else {
      p.ext[p.nd] = shape[d];
      p.ms[p.nd] = mstr[d];
      p.ss[p.nd] = sstr[d];
      ++p.nd;
    }
  }
  if (p.nd == 0) {  // a scalar (or all-ones) sample: one element
    p.ext[0] = 1;
    p.ms[0] = p.ss[0] = 0;
    p.nd = 1;
  }
  return p;
}

template <typename T>
void normalize_range(const T* src, float* dst, const NormPlan& p, int64_t begin, int64_t end, const double* mean,
                     const double* stddev, double scale, double shift) {
  const int L = p.nd - 1;
  int64_t idx[kMaxDims];
  int64_t m = p.mean_off, s = p.std_off, rem = begin;
  for (int j = L; j >= 0; --j) {
    idx[j] = rem % p.ext[j];
    rem /= p.ext[j];
    m += idx[j] * p.ms[j];
    s += idx[j] * p.ss[j];
  }
  const T* x = src + p.src_off;
  float* out = dst + p.dst_off;
  const int64_t ms0 = p.ms[L], ss0 = p.ss[L];
  for (int64_t e = begin; e < end;) {
    int64_t run = std::min(p.ext[L] - idx[L], end - e);
    if (ms0 == 0 && ss0 == 0) {
      const double mu = mean[m], sd = stddev[s];
      for (int64_t r = 0; r < run; ++r)
        out[e + r] = static_cast<float>((static_cast<double>(value_of(x[e + r])) - mu) / sd * scale + shift);
    } else {
      for (int64_t r = 0; r < run; ++r)
        out[e + r] = static_cast<float>((static_cast<double>(value_of(x[e + r])) - mean[m + r * ms0]) /
                                        stddev[s + r * ss0] * scale + shift);
    }
    e += run;
    idx[L] += run;
    m += run * ms0;
    s += run * ss0;
    if (idx[L] < p.ext[L]) continue;
    m -= idx[L] * ms0;
    s -= idx[L] * ss0;
    idx[L] = 0;
    for (int j = L - 1; j >= 0; --j) {
      m += p.ms[j];
      s += p.ss[j];
      if (++idx[j] < p.ext[j]) break;
      m -= idx[j] * p.ms[j];
      s -= idx[j] * p.ss[j];
      idx[j] = 0;
    }
  }
}

using F64Array = ArrayOf<double, true>;

// Checks that every statistic element sample i reads lies inside `stat`.
void check_stat(const char* name, const F64Array& stat, const I64Array& offsets, const I64Array& strides,
                const BatchView& in) {
  if (offsets.ndim() != 1 || offsets.shape(0) != in.num_samples || strides.ndim() != 2 ||
      strides.shape(0) != in.num_samples || strides.shape(1) != in.ndim)
    throw std::invalid_argument(std::string("normalize: ") + name + " offsets must be [N] and strides [N, ndim]");
  for (int64_t i = 0; i < in.num_samples; ++i) {
    if (in.volume(i) == 0) continue;
    int64_t lo = offsets.data()[i], hi = lo;
    for (int64_t d = 0; d < in.ndim; ++d) {
      int64_t st = strides.data()[i * in.ndim + d];
      if (st < 0) throw std::invalid_argument(std::string("normalize: negative ") + name + " stride");
      hi += (in.shape(i)[d] - 1) * st;
    }
    if (lo < 0 || hi >= stat.size())
      throw std::out_of_range(std::string("normalize: ") + name + " of sample " + std::to_string(i) +
                              " lies outside its buffer");
  }
}

}  // namespace

void normalize(ThreadPool& pool, Array src, int src_type, I64Array shapes, I64Array src_offsets, Array dst,
               I64Array dst_offsets, F64Array mean, I64Array mean_offsets, I64Array mean_strides, F64Array stddev,
               I64Array std_offsets, I64Array std_strides, double scale, double shift) {
  if (dtype_code(src) != src_type)
    throw std::invalid_argument("normalize: the input buffer is not of type " + dtype_name(src_type));
  if (dtype_code(dst) != static_cast<int>(DType::FLOAT))
    throw std::invalid_argument("normalize: the output buffer must be float32");
  BatchView in = make_batch_view(src, shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, shapes, dst_offsets, true);
  int nd = static_cast<int>(in.ndim);
  if (nd > kMaxDims) throw std::invalid_argument("normalize: at most 32 dimensions");
  check_stat("mean", mean, mean_offsets, mean_strides, in);
  check_stat("stddev", stddev, std_offsets, std_strides, in);
  std::vector<NormPlan> plans(in.num_samples);
  std::vector<std::pair<int64_t, int64_t>> items;  // (sample, first element)
  for (int64_t i = 0; i < in.num_samples; ++i) {
    NormPlan& p = plans[i];
    p = plan_sample(in.shape(i), mean_strides.data() + i * nd, std_strides.data() + i * nd, nd);
    p.src_off = in.offsets[i];
    p.dst_off = out.offsets[i];
    p.mean_off = mean_offsets.data()[i];
    p.std_off = std_offsets.data()[i];
    for (int64_t b = 0; b < p.volume; b += kGrain) items.emplace_back(i, b);
  }
  const double* mu = mean.data();
  const double* sd = stddev.data();
  float* o = static_cast<float*>(out.data);
  const void* x = in.data;
  PENSTOCK_DISPATCH_WITH_HALF(src_type, T, {
    pool.parallel_for(static_cast<int64_t>(items.size()), [&](int64_t k) {
      const NormPlan& p = plans[items[k].first];
      int64_t b = items[k].second;
      normalize_range<T>(static_cast<const T*>(x), o, p, b, std::min(p.volume, b + kGrain), mu, sd, scale, shift);
    });
  });
}

}  // namespace penstock
