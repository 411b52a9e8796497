// The speech feature kernels (operators/audio_features.py), each a batch per call with the GIL
// released: audio_resample, preemphasis_filter, spectrogram, power_spectrum, a matrix applied
// along one axis (mel_filter_bank, mfcc), to_decibels and nonsilent_region. Transforms run in
// double precision (audio_fft.h) and are written as float, so they agree with DALI's float
// results to float rounding.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <vector>

#include "kernels/audio_features.h"
#include "kernels/audio_fft.h"
#include "kernels/audio_resample.h"
#include "kernels/numeric.h"

namespace penstock {
namespace {

using F32Array = ArrayOf<float, true>;
using F64Array = ArrayOf<double, true>;

void check_type(const Array& a, int code, const char* kernel, const char* what) {
  if (dtype_code(a) != code)
    throw std::invalid_argument(std::string(kernel) + ": " + what + " is not of type " + dtype_name(code));
}

void check_per_sample(const Array& a, int64_t n, const char* kernel, const char* what) {
  if (a.ndim() != 1 || a.shape(0) != n)
    throw std::invalid_argument(std::string(kernel) + ": " + what + " must have one value per sample");
}

}  // namespace

// ---- audio_resample -----------------------------------------------------------------------------
// Sample i (frames x channels, shapes[i] = [frames] or [frames, channels]) resampled from
// in_rates[i] to out_rates[i] into out_shapes[i][0] frames.
void audio_resample(ThreadPool& pool, Array src, int src_type, I64Array shapes, I64Array src_offsets,
                    Array dst, int dst_type, I64Array dst_shapes, I64Array dst_offsets, F64Array in_rates,
                    F64Array out_rates, double quality) {
  check_type(src, src_type, "audio_resample", "the input");
  check_type(dst, dst_type, "audio_resample", "the output");
  BatchView in = make_batch_view(src, shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, dst_shapes, dst_offsets, true);
  check_per_sample(in_rates, in.num_samples, "audio_resample", "in_rates");
  check_per_sample(out_rates, in.num_samples, "audio_resample", "out_rates");
  if (in.ndim != out.ndim || out.num_samples != in.num_samples)
    throw std::invalid_argument("audio_resample: input and output batches differ in rank or size");
  for (int64_t i = 0; i < in.num_samples; ++i)
    if (in.ndim == 2 && in.shape(i)[1] != out.shape(i)[1])
      throw std::invalid_argument("audio_resample: input and output channels differ");
  const double* ir = in_rates.data();
  const double* orate = out_rates.data();
  if (src_type == int(DType::BOOL) || dst_type == int(DType::BOOL))
    throw std::invalid_argument("audio_resample: boolean audio is not supported");
  const SincResampler resampler(resampling_lobes(quality));
  SincResampler::StoreUnit store = nullptr;
  PENSTOCK_DISPATCH_NUMERIC(dst_type, Out, {
    if constexpr (!std::is_same_v<Out, bool>) store = &SincResampler::store_unit<Out>;
  })
  PENSTOCK_DISPATCH_NUMERIC(src_type, In, {
    if constexpr (!std::is_same_v<In, bool>) {
      pool.parallel_for(in.num_samples, [&](int64_t i) {
        const int channels = in.ndim == 2 ? static_cast<int>(in.shape(i)[1]) : 1;
        resampler.resample_into(out.sample_bytes(i), out.elem_size, store, out.shape(i)[0], orate[i],
                                in.sample<In>(i), in.shape(i)[0], ir[i], channels);
      });
    }
  })
}

namespace {

// ---- preemphasis_filter -------------------------------------------------------------------------
enum class Border { kZero = 0, kClamp = 1, kReflect = 2 };

// Elements read as float, and floats written with DALI's conversion: one function per type, so the
// filter itself is compiled once, not once per pair of types.
using LoadFloats = void (*)(const void* src, int64_t n, float* dst);
using StoreFloats = void (*)(const float* src, int64_t n, void* dst);

template <typename In>
void load_floats(const void* src, int64_t n, float* dst) {
  auto* x = static_cast<const In*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(x[i]);
}

template <typename Out>
void store_floats(const float* src, int64_t n, void* dst) {
  auto* y = static_cast<Out*>(dst);
  for (int64_t i = 0; i < n; ++i) y[i] = convert_sat<Out>(src[i]);
}

}  // namespace

// out[t] = x[t] - coeff * x[t - 1] over each sample's elements in memory order (x[-1] by `border`),
// in float as DALI computes it.
void preemphasis(ThreadPool& pool, Array src, int src_type, I64Array shapes, I64Array src_offsets,
                 Array dst, int dst_type, I64Array dst_offsets, F32Array coeffs, int border) {
  check_type(src, src_type, "preemphasis_filter", "the input");
  check_type(dst, dst_type, "preemphasis_filter", "the output");
  BatchView in = make_batch_view(src, shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, shapes, dst_offsets, true);
  check_per_sample(coeffs, in.num_samples, "preemphasis_filter", "coeffs");
  const float* coeff = coeffs.data();
  const Border mode = static_cast<Border>(border);
  LoadFloats load;
  StoreFloats store;
  PENSTOCK_DISPATCH_NUMERIC(src_type, In, load = &load_floats<In>)
  PENSTOCK_DISPATCH_NUMERIC(dst_type, Out, store = &store_floats<Out>)
  pool.parallel_for(in.num_samples, [&](int64_t i) {
    const int64_t n = in.volume(i);
    if (n == 0) return;
    const float c = coeff[i];
    constexpr int64_t kBlock = 1024;
    float x[kBlock], y[kBlock];
    load(in.sample_bytes(i), std::min<int64_t>(n, 2), x);
    float before = mode == Border::kZero ? 0.0f : mode == Border::kReflect && n > 1 ? x[1] : x[0];
    for (int64_t b = 0; b < n; b += kBlock) {
      const int64_t m = std::min(kBlock, n - b);
      load(in.sample_bytes(i) + b * in.elem_size, m, x);
      for (int64_t t = 0; t < m; ++t) {
        y[t] = x[t] - c * before;
        before = x[t];
      }
      store(y, m, out.sample_bytes(i) + b * out.elem_size);
    }
  });
}

namespace {

// ---- spectrogram and power_spectrum -------------------------------------------------------------
// Signals are transformed kLanes at a time (audio_fft.h); the plan is shared, the scratch is each
// thread's own.
struct LaneScratch {
  std::vector<double> inputs, powers;
  std::vector<float> edge;  // a frame that reaches past the signal, padded
};

LaneScratch& lane_scratch(const LaneRealDft& dft) {
  thread_local LaneScratch scratch;
  scratch.inputs.resize(dft.scratch_size());
  scratch.powers.resize(dft.bins() * kLanes);
  return scratch;
}

int64_t reflect_index(int64_t i, int64_t n) {  // ... 2 1 | 0 1 2 ... n-1 | n-2 ...
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  i = std::abs(i) % period;
  return i >= n ? period - i : i;
}

}  // namespace

// Frames of `window.size()` samples every `step` (centred on t * step when `centered`, padded by
// reflection or zeros), windowed, zero-padded to nfft; bins x frames ("ft") or frames x bins.
void spectrogram(ThreadPool& pool, Array src, I64Array lengths, I64Array src_offsets, Array dst,
                 I64Array dst_shapes, I64Array dst_offsets, F64Array window, int64_t nfft, int64_t step,
                 bool centered, bool reflect, int power_kind, bool freq_major) {
  check_type(src, int(DType::FLOAT), "spectrogram", "the input");
  check_type(dst, int(DType::FLOAT), "spectrogram", "the output");
  BatchView in = make_batch_view(src, lengths, src_offsets, false);
  BatchView out = make_batch_view(dst, dst_shapes, dst_offsets, true);
  const int64_t wlen = window.size(), bins = nfft / 2 + 1;
  if (in.ndim != 1 || out.ndim != 2 || wlen > nfft || step < 1)
    throw std::invalid_argument("spectrogram: bad arguments");
  std::vector<std::pair<int64_t, int64_t>> items;  // (sample, first frame)
  constexpr int64_t kFramesPerItem = 2 * kLanes;
  for (int64_t i = 0; i < in.num_samples; ++i) {
    const int64_t frames = freq_major ? out.shape(i)[1] : out.shape(i)[0];
    if ((freq_major ? out.shape(i)[0] : out.shape(i)[1]) != bins)
      throw std::invalid_argument("spectrogram: output shape does not hold nfft / 2 + 1 bins");
    for (int64_t f = 0; f < frames; f += kFramesPerItem) items.emplace_back(i, f);
  }
  const double* w = window.data();
  const LaneRealDft dft(nfft);
  const int64_t shift = centered ? wlen / 2 : 0;
  pool.parallel_for(static_cast<int64_t>(items.size()), [&](int64_t k) {
    const auto [i, f0] = items[k];
    const float* x = in.sample<float>(i);
    const int64_t n = in.shape(i)[0];
    const int64_t frames = freq_major ? out.shape(i)[1] : out.shape(i)[0];
    float* y = out.sample<float>(i);
    LaneScratch& scratch = lane_scratch(dft);
    for (int64_t g = f0; g < std::min(frames, f0 + kFramesPerItem); g += kLanes) {
      const int64_t lanes = std::min(kLanes, frames - g);
      dft.clear(scratch.inputs.data());
      for (int64_t l = 0; l < lanes; ++l) {
        const int64_t start = (g + l) * step - shift;
        if (start >= 0 && start + wlen <= n) {
          dft.load(scratch.inputs.data(), l, x + start, 1, wlen, w);
          continue;
        }
        scratch.edge.resize(wlen);
        for (int64_t t = 0; t < wlen; ++t) {
          const int64_t idx = start + t;
          scratch.edge[t] = idx >= 0 && idx < n ? x[idx] : reflect ? x[reflect_index(idx, n)] : 0.0f;
        }
        dft.load(scratch.inputs.data(), l, scratch.edge.data(), 1, wlen, w);
      }
      dft.power(scratch.inputs.data(), power_kind, scratch.powers.data());
      const double* p = scratch.powers.data();
      if (freq_major) {  // the lanes are consecutive frames: contiguous in a row of bins x frames
        for (int64_t b = 0; b < bins; ++b)
          for (int64_t l = 0; l < lanes; ++l) y[b * frames + g + l] = static_cast<float>(p[b * kLanes + l]);
      } else {
        for (int64_t l = 0; l < lanes; ++l)
          for (int64_t b = 0; b < bins; ++b) y[(g + l) * bins + b] = static_cast<float>(p[b * kLanes + l]);
      }
    }
  });
}

namespace {

// The output of a kernel that maps the middle axis of [outer, n, inner] samples to extents[i]
// values, and its work items: one per (sample, outer index).
struct MiddleAxisOutput {
  I64Array shapes;
  BatchView view;
  std::vector<std::pair<int64_t, int64_t>> items;
};

MiddleAxisOutput middle_axis_output(const BatchView& in, const std::vector<int64_t>& extents, Array& dst,
                                    I64Array& dst_offsets) {
  MiddleAxisOutput out;
  out.shapes = I64Array::empty({in.num_samples, 3});
  int64_t* shape_data = out.shapes.mutable_data();
  for (int64_t i = 0; i < in.num_samples; ++i) {
    shape_data[i * 3] = in.shape(i)[0];
    shape_data[i * 3 + 1] = extents[i];
    shape_data[i * 3 + 2] = in.shape(i)[2];
    for (int64_t o = 0; o < in.shape(i)[0]; ++o) out.items.emplace_back(i, o);
  }
  out.view = make_batch_view(dst, out.shapes, dst_offsets, true);
  return out;
}

// body(sample, outer index) for every work item of `plan`, in parallel.
template <typename Body>
void for_each_item(ThreadPool& pool, const MiddleAxisOutput& plan, Body body) {
  pool.parallel_for(static_cast<int64_t>(plan.items.size()),
                    [&](int64_t k) { body(plan.items[k].first, plan.items[k].second); });
}

}  // namespace

// The transform of every line along `axis` (zero-padded or cut to nffts[i]) -> nffts[i] / 2 + 1
// bins. Samples cross as [outer, length, inner] shapes, the output as [outer, bins, inner]; the
// lines of a sample (outer-major) are transformed kLanes at a time.
void power_spectrum(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, Array dst,
                    I64Array dst_offsets, I64Array nffts, int power_kind) {
  check_type(src, int(DType::FLOAT), "power_spectrum", "the input");
  check_type(dst, int(DType::FLOAT), "power_spectrum", "the output");
  BatchView in = make_batch_view(src, shapes, src_offsets, false);
  if (in.ndim != 3) throw std::invalid_argument("power_spectrum: shapes must be [N, 3] (outer, length, inner)");
  check_per_sample(nffts, in.num_samples, "power_spectrum", "nffts");
  const int64_t* nfft = nffts.data();
  std::map<int64_t, std::unique_ptr<LaneRealDft>> transforms;  // one plan per distinct size
  auto out_shapes = I64Array::empty({in.num_samples, 3});
  int64_t* out_shape = out_shapes.mutable_data();
  std::vector<std::pair<int64_t, int64_t>> items;  // (sample, first line)
  for (int64_t i = 0; i < in.num_samples; ++i) {
    if (nfft[i] < 1) throw std::invalid_argument("power_spectrum: nfft must be positive");
    if (!transforms.count(nfft[i])) transforms[nfft[i]] = std::make_unique<LaneRealDft>(nfft[i]);
    out_shape[i * 3] = in.shape(i)[0];
    out_shape[i * 3 + 1] = nfft[i] / 2 + 1;
    out_shape[i * 3 + 2] = in.shape(i)[2];
    for (int64_t q = 0, lines = in.shape(i)[0] * in.shape(i)[2]; q < lines; q += kLanes) items.emplace_back(i, q);
  }
  BatchView out = make_batch_view(dst, out_shapes, dst_offsets, true);
  pool.parallel_for(static_cast<int64_t>(items.size()), [&](int64_t k) {
    const auto [i, q0] = items[k];
    const LaneRealDft& dft = *transforms.at(nfft[i]);
    const int64_t len = in.shape(i)[1], inner = in.shape(i)[2], bins = dft.bins();
    const int64_t lanes = std::min(kLanes, in.shape(i)[0] * inner - q0), take = std::min(len, nfft[i]);
    LaneScratch& scratch = lane_scratch(dft);
    dft.clear(scratch.inputs.data());
    // line q: outer index q / inner, inner index q % inner
    for (int64_t l = 0; l < lanes; ++l) {
      const int64_t q = q0 + l;
      dft.load(scratch.inputs.data(), l, in.sample<float>(i) + (q / inner) * len * inner + q % inner, inner, take,
               nullptr);
    }
    dft.power(scratch.inputs.data(), power_kind, scratch.powers.data());
    for (int64_t l = 0; l < lanes; ++l) {
      const int64_t q = q0 + l;
      float* line = out.sample<float>(i) + (q / inner) * bins * inner + q % inner;
      for (int64_t b = 0; b < bins; ++b) line[b * inner] = static_cast<float>(scratch.powers[b * kLanes + l]);
    }
  });
}

// ---- a matrix along one axis: mel_filter_bank, mfcc ---------------------------------------------
// out[o, r, j] = sum_c M[r, c] * x[o, c, j] with M = matrices[which[i]] for sample i, samples as
// [outer, cols, inner]; zero coefficients (most of a mel filter bank) are skipped.
void matrix_along_axis(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, Array dst,
                       I64Array dst_offsets, std::vector<F64Array> matrices, I64Array which) {
  check_type(src, int(DType::FLOAT), "matrix_along_axis", "the input");
  check_type(dst, int(DType::FLOAT), "matrix_along_axis", "the output");
  BatchView in = make_batch_view(src, shapes, src_offsets, false);
  if (in.ndim != 3) throw std::invalid_argument("matrix_along_axis: shapes must be [N, 3]");
  check_per_sample(which, in.num_samples, "matrix_along_axis", "which");
  // each matrix's rows as lists of nonzero (column, coefficient)
  using SparseRows = std::vector<std::vector<std::pair<int64_t, double>>>;
  std::vector<SparseRows> sparse(matrices.size());
  for (size_t m = 0; m < matrices.size(); ++m) {
    const F64Array& a = matrices[m];
    if (a.ndim() != 2) throw std::invalid_argument("matrix_along_axis: matrices must be 2-D");
    sparse[m].resize(a.shape(0));
    for (int64_t r = 0; r < a.shape(0); ++r)
      for (int64_t c = 0; c < a.shape(1); ++c)
        if (const double v = a.data()[r * a.shape(1) + c]; v != 0) sparse[m][r].emplace_back(c, v);
  }
  const int64_t* pick = which.data();
  std::vector<int64_t> rows_out(in.num_samples);
  for (int64_t i = 0; i < in.num_samples; ++i) {
    if (pick[i] < 0 || pick[i] >= static_cast<int64_t>(matrices.size()))
      throw std::invalid_argument("matrix_along_axis: matrix index out of range");
    const F64Array& a = matrices[pick[i]];
    if (in.shape(i)[1] != a.shape(1))
      throw std::invalid_argument("matrix_along_axis: sample " + std::to_string(i) + " has " +
                                  std::to_string(in.shape(i)[1]) + " values along the axis, its matrix " +
                                  std::to_string(a.shape(1)) + " columns");
    rows_out[i] = a.shape(0);
  }
  MiddleAxisOutput plan = middle_axis_output(in, rows_out, dst, dst_offsets);
  const BatchView& out = plan.view;
  for_each_item(pool, plan, [&](int64_t i, int64_t o) {
    const SparseRows& rows = sparse[pick[i]];
    const int64_t inner = in.shape(i)[2], cols = in.shape(i)[1], nrows = static_cast<int64_t>(rows.size());
    const float* x = in.sample<float>(i) + o * cols * inner;
    float* y = out.sample<float>(i) + o * nrows * inner;
    thread_local std::vector<double> acc;
    for (int64_t r = 0; r < nrows; ++r) {
      acc.assign(inner, 0.0);
      for (const auto& [c, m] : rows[r]) {
        const float* xc = x + c * inner;
        for (int64_t j = 0; j < inner; ++j) acc[j] += m * xc[j];
      }
      for (int64_t j = 0; j < inner; ++j) y[r * inner + j] = static_cast<float>(acc[j]);
    }
  });
}

// ---- to_decibels --------------------------------------------------------------------------------
// multiplier * log10(max(x / refs[i], floor_ratio)), floor_ratio = 10^(cutoff_db / multiplier) as a
// float; the operator gives each sample's reference (its maximum by default, from the reduction
// kernel). In float, as DALI computes it. A ratio that is not a number (0 / 0) or not positive (a
// negative reference) gives the floor, as in DALI.
void to_decibels(ThreadPool& pool, Array src, I64Array shapes, I64Array src_offsets, Array dst,
                 I64Array dst_offsets, double multiplier, F32Array refs, double floor_ratio) {
  check_type(src, int(DType::FLOAT), "to_decibels", "the input");
  check_type(dst, int(DType::FLOAT), "to_decibels", "the output");
  BatchView in = make_batch_view(src, shapes, src_offsets, false);
  BatchView out = make_batch_view(dst, shapes, dst_offsets, true);
  check_per_sample(refs, in.num_samples, "to_decibels", "refs");
  const float* ref = refs.data();
  const float mul = static_cast<float>(multiplier), floor = static_cast<float>(floor_ratio);
  pool.parallel_for(in.num_samples, [&](int64_t i) {
    const float* x = in.sample<float>(i);
    float* y = out.sample<float>(i);
    const float inv = 1.0f / ref[i];
    for (int64_t t = 0, n = in.volume(i); t < n; ++t) {
      const float ratio = x[t] * inv;
      y[t] = mul * std::log10(ratio > floor ? ratio : floor);
    }
  });
}

// ---- nonsilent_region ---------------------------------------------------------------------------
// The mean square over the window_length samples ending at each position, in dB against the
// reference power (<= 0: the sample's largest), compared with cutoff_db: the region runs from the
// first loud window's first sample to the last loud position. A ratio that is not a number (a
// silent sample against its own maximum, 0) counts as loud, as in DALI; no loud position gives (0, 0).
std::tuple<ArrayOf<int32_t>, ArrayOf<int32_t>> nonsilent_region(ThreadPool& pool, Array src, int src_type,
                                                                 I64Array lengths, I64Array src_offsets,
                                                                 double cutoff_db, int64_t window_length,
                                                                 double reference_power) {
  check_type(src, src_type, "nonsilent_region", "the input");
  BatchView in = make_batch_view(src, lengths, src_offsets, false);
  if (in.ndim != 1) throw std::invalid_argument("nonsilent_region: the input must be 1-D");
  if (window_length < 1) throw std::invalid_argument("nonsilent_region: window_length must be positive");
  auto begin = ArrayOf<int32_t>::empty({in.num_samples}), length = ArrayOf<int32_t>::empty({in.num_samples});
  int32_t* b = begin.mutable_data();
  int32_t* len = length.mutable_data();
  PENSTOCK_DISPATCH_NUMERIC(src_type, T, {
    pool.parallel_for(in.num_samples, [&](int64_t i) {
      const T* x = in.sample<T>(i);
      const int64_t n = in.shape(i)[0];
      thread_local std::vector<double> power;
      power.resize(n);
      double sum = 0;  // running sum of squares over the window; exact enough in double
      const double inv_window = 1.0 / window_length;
      double peak = 0;
      for (int64_t t = 0; t < n; ++t) {
        const double v = static_cast<double>(x[t]);
        sum += v * v;
        if (t >= window_length) {
          const double old = static_cast<double>(x[t - window_length]);
          sum -= old * old;
        }
        power[t] = std::max(sum, 0.0) * inv_window;
        peak = std::max(peak, power[t]);
      }
      const double ref = reference_power > 0 ? reference_power : peak;
      auto loud = [&](int64_t t) {
        const double db = 10.0 * std::log10(power[t] / ref);
        return !(db < cutoff_db);
      };
      int64_t first = 0;
      while (first < n && !loud(first)) ++first;
      if (first == n) {
        b[i] = 0;
        len[i] = 0;
        return;
      }
      int64_t last = n - 1;
      while (!loud(last)) --last;
      const int64_t start = std::max<int64_t>(0, first - window_length + 1);
      b[i] = static_cast<int32_t>(start);
      len[i] = static_cast<int32_t>(last - start + 1);
    });
  })
  return {begin, length};
}

}  // namespace penstock
