// reductions.* (and normalize's statistics): sum, mean, mean_square, rms, min, max, variance and
// std_dev of every sample over chosen axes, the batch in one call. Same signature and results as
// GpuKernels.reduce (csrc/cuda/reduce.cu): sums accumulate in 64 bits of the output's kind (each
// element first converted to an integer output type), means and moments in double, min/max in
// the input type (NaN-propagating, as numpy); results are converted to the output type by a C
// cast (numpy's astype). A mean into an integer type is DALI's: the sum wrapped to that type, then
// divided by the count, truncating. Work items are ranges of one sample's outputs, each summed in order.
#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <type_traits>
#include <vector>

#include "kernels/reductions.h"
#include "kernels/numeric.h"

namespace penstock {
namespace {

enum ReduceKind { kSum, kMean, kMeanSquare, kRms, kMin, kMax, kVariance, kStdDev };
constexpr int kMaxDims = 32;
constexpr int64_t kGrain = 1 << 15;  // input elements per work item

// One sample, its dimensions of extent 1 dropped and neighbouring kept / reduced ones merged
// (row-major, so a run of reduced axes is one strided loop).
struct SamplePlan {
  int64_t in_off = 0, out_off = 0, out_vol = 1, count = 1, mean_off = 0;
  int nk = 0, nr = 0;
  int64_t kext[kMaxDims], kstr[kMaxDims], rext[kMaxDims], rstr[kMaxDims];
};

SamplePlan plan_sample(const int64_t* shape, int nd, const std::vector<bool>& reduced) {
  SamplePlan p;
  int64_t stride = 1;
  bool last_reduced = false;
  for (int d = nd - 1; d >= 0; --d) {  // innermost first; groups are reversed below
    int64_t e = shape[d];
    if (reduced[d]) p.count *= e;
    else p.out_vol *= e;
    if (e != 1) {
      int& n = reduced[d] ? p.nr : p.nk;
      int64_t* ext = reduced[d] ? p.rext : p.kext;
      int64_t* str = reduced[d] ? p.rstr : p.kstr;
      bool merge = n > 0 && last_reduced == reduced[d];
      if (merge) {
        ext[n - 1] *= e;
      } else {
        ext[n] = e;
        str[n] = stride;
        ++n;
      }
      last_reduced = reduced[d];
    }
    stride *= e;
  }
  std::reverse(p.kext, p.kext + p.nk);
  std::reverse(p.kstr, p.kstr + p.nk);
  std::reverse(p.rext, p.rext + p.nr);
  std::reverse(p.rstr, p.rstr + p.nr);
  return p;
}

// f(value) for every reduced element of the output whose first element is at `base`, in order.
template <typename In, typename F>
inline void for_each_reduced(const In* x, const SamplePlan& p, int64_t base, F&& f) {
  if (p.count == 0) return;
  if (p.nr == 0) {
    f(value_of(x[base]));
    return;
  }
  const int64_t n0 = p.rext[p.nr - 1], s0 = p.rstr[p.nr - 1];
  if (p.nr == 1) {
    for (int64_t r = 0; r < n0; ++r) f(value_of(x[base + r * s0]));
    return;
  }
  int64_t idx[kMaxDims];
  std::fill(idx, idx + p.nr, 0);
  while (true) {
    const In* row = x + base;
    for (int64_t r = 0; r < n0; ++r) f(value_of(row[r * s0]));
    int j = p.nr - 2;
    for (; j >= 0; --j) {
      base += p.rstr[j];
      if (++idx[j] < p.rext[j]) break;
      base -= idx[j] * p.rstr[j];
      idx[j] = 0;
    }
    if (j < 0) return;
  }
}

// g(output_index, first_input_element) for outputs [begin, end) of one sample.
template <typename G>
inline void for_each_output(const SamplePlan& p, int64_t begin, int64_t end, G&& g) {
  int64_t idx[kMaxDims] = {0};
  int64_t base = p.in_off, rem = begin;
  for (int j = p.nk - 1; j >= 0; --j) {
    idx[j] = rem % p.kext[j];
    rem /= p.kext[j];
    base += idx[j] * p.kstr[j];
  }
  for (int64_t o = begin; o < end; ++o) {
    g(o, base);
    for (int j = p.nk - 1; j >= 0; --j) {
      base += p.kstr[j];
      if (++idx[j] < p.kext[j]) break;
      base -= idx[j] * p.kstr[j];
      idx[j] = 0;
    }
  }
}

template <typename V>
inline V pick(V acc, V v, bool is_min) {  // numpy's: a NaN wins
  return (v != v || (is_min ? v < acc : v > acc)) ? v : acc;
}

struct Item {
  int64_t sample, begin, end;
};

template <typename Out>
void store_double(void* dst, int64_t i, double v) {
  static_cast<Out*>(dst)[i] = cast_to<Out>(v);
}

// The work item kernels, one function per type (or pair of types), chosen once per call: the
// parallel loop that runs them is the same code for all.
using SumItem = void (*)(const void* x, void* dst, const SamplePlan& p, const Item& it, bool divide);

template <typename In, typename Out>
void sum_item(const void* x_data, void* dst_data, const SamplePlan& p, const Item& it, bool divide) {
  auto* x = static_cast<const In*>(x_data);
  auto* dst = static_cast<Out*>(dst_data);
  using A = std::conditional_t<is_floating_v<Out>, double, std::conditional_t<std::is_signed_v<Out>, int64_t, uint64_t>>;
  for_each_output(p, it.begin, it.end, [&](int64_t o, int64_t base) {
    A acc = 0;
    for_each_reduced(x, p, base, [&](auto v) {
      if constexpr (is_floating_v<Out>) acc += static_cast<double>(v);
      else acc += static_cast<A>(cast_to<Out>(v));
    });
    Out s = cast_to<Out>(acc);
    if constexpr (!is_floating_v<Out>) {
      if (divide) s = p.count ? static_cast<Out>(s / p.count) : Out(0);
    }
    dst[p.out_off + o] = s;
  });
}

using MomentItem = void (*)(int kind, const void* x, void* dst, void (*store)(void*, int64_t, double),
                           const SamplePlan& p, const Item& it, const double* mean, int ddof);

template <typename In>
void moment_item(int kind, const void* x_data, void* dst, void (*store)(void*, int64_t, double), const SamplePlan& p,
                 const Item& it, const double* mean, int ddof) {
  auto* x = static_cast<const In*>(x_data);
  double count = static_cast<double>(p.count);
  for_each_output(p, it.begin, it.end, [&](int64_t o, int64_t base) {
    double acc = 0, r;
    if (kind == kMean) {
      for_each_reduced(x, p, base, [&](auto v) { acc += static_cast<double>(v); });
      r = acc / count;
    } else if (kind == kMeanSquare || kind == kRms) {
      for_each_reduced(x, p, base, [&](auto v) { acc += static_cast<double>(v) * static_cast<double>(v); });
      r = kind == kRms ? std::sqrt(acc / count) : acc / count;
    } else {
      double mu = mean[p.mean_off + o];
      for_each_reduced(x, p, base, [&](auto v) {
        double dv = static_cast<double>(v) - mu;
        acc += dv * dv;
      });
      r = acc / (count - ddof);
      if (kind == kStdDev) r = std::sqrt(r);
    }
    store(dst, p.out_off + o, r);
  });
}

using MinMaxItem = void (*)(bool is_min, const void* x, void* dst, const SamplePlan& p, const Item& it);

template <typename In>
void minmax_item(bool is_min, const void* x_data, void* dst_data, const SamplePlan& p, const Item& it) {
  auto* x = static_cast<const In*>(x_data);
  auto* dst = static_cast<In*>(dst_data);
  for_each_output(p, it.begin, it.end, [&](int64_t o, int64_t base) {
    auto acc = value_of(x[base]);
    for_each_reduced(x, p, base, [&](auto v) { acc = pick(acc, v, is_min); });
    dst[p.out_off + o] = cast_to<In>(acc);
  });
}

using F64Array = ArrayOf<double, true>;

}  // namespace

void reduce(ThreadPool& pool, int kind, Array src, I64Array src_shapes, I64Array src_offsets,
            std::vector<int64_t> axes, Array dst, I64Array dst_offsets, int ddof, std::optional<F64Array> mean,
            std::optional<I64Array> mean_offsets) {
  if (kind < kSum || kind > kStdDev) throw std::invalid_argument("reduce: unknown kind " + std::to_string(kind));
  BatchView in = make_batch_view(src, src_shapes, src_offsets, false);
  int nd = static_cast<int>(in.ndim);
  if (nd > kMaxDims) throw std::invalid_argument("reduce: at most 32 dimensions");
  if (!dst.c_contiguous() || !dst.writeable())
    throw std::invalid_argument("reduce: the output buffer must be contiguous and writable");
  if (dst_offsets.ndim() != 1 || dst_offsets.shape(0) != in.num_samples)
    throw std::invalid_argument("reduce: dst_offsets must have one entry per sample");
  std::vector<bool> reduced(nd, false);
  for (int64_t a : axes) {
    if (a < 0 || a >= nd) throw std::invalid_argument("reduce: axis " + std::to_string(a) + " out of range");
    reduced[a] = true;
  }
  bool central = kind == kVariance || kind == kStdDev;
  if (central && (!mean || !mean_offsets || mean_offsets->ndim() != 1 || mean_offsets->shape(0) != in.num_samples))
    throw std::invalid_argument("reduce: variance and std_dev need a mean and one mean offset per sample");
  int src_code = dtype_code(src), dst_code = dtype_code(dst);
  if ((kind == kMin || kind == kMax) && src_code != dst_code)
    throw std::invalid_argument("reduce: min and max write the input's type");

  std::vector<SamplePlan> plans(in.num_samples);
  std::vector<Item> items;
  const int64_t* d_off = dst_offsets.data();
  for (int64_t i = 0; i < in.num_samples; ++i) {
    SamplePlan& p = plans[i];
    p = plan_sample(in.shape(i), nd, reduced);
    p.in_off = in.offsets[i];
    p.out_off = d_off[i];
    if (p.out_off < 0 || p.out_off + p.out_vol > dst.size())
      throw std::out_of_range("reduce: output of sample " + std::to_string(i) + " lies outside its buffer");
    if (p.out_vol == 0) continue;
    if ((kind == kMin || kind == kMax) && p.count == 0)
      throw SampleError(i, "reduce: no minimum or maximum of an empty sample");
    if (central) {
      p.mean_off = mean_offsets->data()[i];
      if (p.mean_off < 0 || p.mean_off + p.out_vol > mean->size())
        throw std::out_of_range("reduce: mean of sample " + std::to_string(i) + " lies outside its buffer");
    }
    int64_t step = std::max<int64_t>(1, kGrain / std::max<int64_t>(p.count, 1));
    for (int64_t b = 0; b < p.out_vol; b += step) items.push_back({i, b, std::min(p.out_vol, b + step)});
  }
  const void* x = src.data();
  void* out = dst.mutable_data();
  const double* mu = central ? mean->data() : nullptr;
  void (*store)(void*, int64_t, double) = nullptr;
  bool int_mean = kind == kMean && dst.kind() != 'f';
  if (kind != kSum && kind != kMin && kind != kMax && !int_mean) {
    PENSTOCK_DISPATCH_WITH_HALF(dst_code, Out, { store = &store_double<Out>; });
  }
  std::function<void(const Item&)> run_item;
  if (kind == kSum || int_mean) {
    SumItem sum = nullptr;
    PENSTOCK_DISPATCH_WITH_HALF(src_code, In, {
      PENSTOCK_DISPATCH_WITH_HALF(dst_code, Out, sum = &sum_item<In, Out>);
    });
    run_item = [&](const Item& it) { sum(x, out, plans[it.sample], it, int_mean); };
  } else if (kind == kMin || kind == kMax) {
    MinMaxItem minmax = nullptr;
    PENSTOCK_DISPATCH_WITH_HALF(src_code, In, minmax = &minmax_item<In>);
    run_item = [&](const Item& it) { minmax(kind == kMin, x, out, plans[it.sample], it); };
  } else {
    MomentItem moment = nullptr;
    PENSTOCK_DISPATCH_WITH_HALF(src_code, In, moment = &moment_item<In>);
    run_item = [&](const Item& it) { moment(kind, x, out, store, plans[it.sample], it, mu, ddof); };
  }
  pool.parallel_for(static_cast<int64_t>(items.size()), [&](int64_t k) { run_item(items[k]); });
}

}  // namespace penstock
