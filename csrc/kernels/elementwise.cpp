// Element-wise kernels over whole batches: cast, binary arithmetic with numpy-style
// broadcasting per sample, and unary math. Inputs arrive already promoted to the compute type
// (the Python side applies DALI's promotion rules); outputs are the compute type or bool.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>
#include <type_traits>

#include "engine/convert.h"
#include "kernels/elementwise.h"

namespace penstock {
namespace {

constexpr int64_t kGrain = 1 << 15;  // elements per task

// ---- cast -------------------------------------------------------------------------------

// Converts elements [b, e) of src into dst. One function per (input, output) type, chosen once per
// call: the driver (the parallel loop) is the same code for all of them.
using CastRange = void (*)(const void* src, void* dst, int64_t b, int64_t e);

template <bool Truncate, typename Out, typename In>
void cast_range(const void* src, void* dst, int64_t b, int64_t e) {
  auto* in = static_cast<const In*>(src);
  auto* out = static_cast<Out*>(dst);
  for (int64_t i = b; i < e; ++i) out[i] = Truncate ? convert_trunc<Out>(in[i]) : convert_sat<Out>(in[i]);
}

template <bool Truncate, typename Out>
void cast_from_half(const void* src, void* dst, int64_t b, int64_t e) {
  auto* in = static_cast<const uint16_t*>(src);
  auto* out = static_cast<Out*>(dst);
  for (int64_t i = b; i < e; ++i) {
    float v = half_to_float(in[i]);
    out[i] = Truncate ? convert_trunc<Out>(v) : convert_sat<Out>(v);
  }
}

template <bool Saturate, typename In>
void cast_to_half(const void* src, void* dst, int64_t b, int64_t e) {
  auto* in = static_cast<const In*>(src);
  auto* out = static_cast<uint16_t*>(dst);
  for (int64_t i = b; i < e; ++i) {
    float v = static_cast<float>(in[i]);
    out[i] = Saturate ? float_to_half_sat(v) : float_to_half(v);
  }
}

}  // namespace

// crop_conversion: crop and slice outputs' conversion (DALI's): float -> integer truncates toward
// zero instead of rounding, and float16 saturates to +-65504 instead of overflowing to inf.
void cast(ThreadPool& pool, Array src, int src_code, Array dst, int dst_code, bool crop_conversion) {
  if (src.size() != dst.size()) throw std::invalid_argument("cast: buffer sizes differ");
  const void* s = src.data();
  void* d = dst.mutable_data();
  int64_t n = src.size();
  auto half = static_cast<int>(DType::FLOAT16);
  if (src_code == half && dst_code == half) {
    std::memcpy(d, s, n * 2);
    return;
  }
  CastRange range;
  if (src_code == half) {
    PENSTOCK_DISPATCH_NUMERIC(dst_code, Out, range = crop_conversion ? &cast_from_half<true, Out>
                                                                      : &cast_from_half<false, Out>);
  } else if (dst_code == half) {
    PENSTOCK_DISPATCH_NUMERIC(src_code, In, range = crop_conversion ? &cast_to_half<true, In>
                                                                     : &cast_to_half<false, In>);
  } else {
    PENSTOCK_DISPATCH_NUMERIC(src_code, In, {
      PENSTOCK_DISPATCH_NUMERIC(dst_code, Out, range = crop_conversion ? &cast_range<true, Out, In>
                                                                        : &cast_range<false, Out, In>);
    });
  }
  pool.parallel_range(n, kGrain, [&](int64_t b, int64_t e) { range(s, d, b, e); });
}

namespace {

// ---- binary -----------------------------------------------------------------------------

enum BinaryOp {
  kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kMin, kMax,
  kEq, kNe, kLt, kLe, kGt, kGe, kBitAnd, kBitOr, kBitXor, kShl, kShr, kAtan2, kFPow,
};

template <typename T>
inline T int_pow(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) return 0;  // DALI: an integer power with a negative exponent is 0, whatever the base
  }
  using U = std::make_unsigned_t<T>;
  U result = 1, b = static_cast<U>(base);
  for (auto e = exp; e > 0; e >>= 1) {  // wraps like the other integer ops
    if (e & 1) result = static_cast<U>(result * b);
    b = static_cast<U>(b * b);
  }
  return static_cast<T>(result);
}

template <int OP, typename T>
inline auto apply_binary(T a, T b) {
  if constexpr (OP == kEq) return a == b;
  else if constexpr (OP == kNe) return a != b;
  else if constexpr (OP == kLt) return a < b;
  else if constexpr (OP == kLe) return a <= b;
  else if constexpr (OP == kGt) return a > b;
  else if constexpr (OP == kGe) return a >= b;
  else if constexpr (std::is_same_v<T, bool>) {
    if constexpr (OP == kBitAnd || OP == kMul || OP == kMin) return bool(a && b);
    else if constexpr (OP == kBitOr || OP == kAdd || OP == kMax) return bool(a || b);
    else if constexpr (OP == kBitXor || OP == kSub) return bool(a != b);
    else if constexpr (OP == kShr) return bool(a && !b);  // as integers: 1 >> 1 is 0
    else return bool(a);
  } else if constexpr (std::is_floating_point_v<T>) {
    if constexpr (OP == kAdd) return T(a + b);
    else if constexpr (OP == kSub) return T(a - b);
    else if constexpr (OP == kMul) return T(a * b);
    else if constexpr (OP == kDiv || OP == kFloorDiv) return T(a / b);
    else if constexpr (OP == kMod) return T(std::fmod(a, b));
    else if constexpr (OP == kPow || OP == kFPow) return T(std::pow(a, b));
    else if constexpr (OP == kMin) return std::min(a, b);
    else if constexpr (OP == kMax) return std::max(a, b);
    else if constexpr (OP == kAtan2) return T(std::atan2(a, b));
    else return T(0);  // bitwise ops are rejected for floats on the Python side
  } else {
    using U = std::make_unsigned_t<T>;
    // Integer arithmetic wraps (done in the unsigned type to stay defined).
    if constexpr (OP == kAdd) return T(U(a) + U(b));
    else if constexpr (OP == kSub) return T(U(a) - U(b));
    else if constexpr (OP == kMul) return T(U(a) * U(b));
    else if constexpr (OP == kDiv || OP == kFloorDiv || OP == kMod) {
      if (b == 0) return T(0);  // defined result instead of a trap
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return OP == kMod ? T(0) : T(U(0) - U(a));
      }
      return OP == kMod ? T(a % b) : T(a / b);  // C: truncation, dividend's sign
    } else if constexpr (OP == kPow) return int_pow<T>(a, b);
    else if constexpr (OP == kMin) return std::min(a, b);
    else if constexpr (OP == kMax) return std::max(a, b);
    else if constexpr (OP == kBitAnd) return T(a & b);
    else if constexpr (OP == kBitOr) return T(a | b);
    else if constexpr (OP == kBitXor) return T(a ^ b);
    else if constexpr (OP == kShl) {
      auto s = static_cast<int64_t>(b);
      return (s < 0 || s >= int64_t(sizeof(T) * 8)) ? T(0) : T(U(a) << s);
    } else if constexpr (OP == kShr) {
      auto s = static_cast<int64_t>(b);
      if (s < 0 || s >= int64_t(sizeof(T) * 8)) return (std::is_signed_v<T> && a < 0) ? T(-1) : T(0);
      return T(a >> s);
    } else return T(0);
  }
}

// Per-sample broadcasting plan: dims collapsed where possible, then rows of the last dim.
struct Plan {
  int nd = 0;
  int64_t shape[8];
  int64_t stride_a[8], stride_b[8];
};

void make_plan(const int64_t* out_shape, int64_t nd, const int64_t* a_shape, int64_t a_nd,
               const int64_t* b_shape, int64_t b_nd, Plan& p) {
  if (nd > 8) throw std::invalid_argument("element-wise ops support at most 8 dimensions");
  int64_t sa[8], sb[8], full_a = 1, full_b = 1;
  for (int64_t d = nd - 1; d >= 0; --d) {
    int64_t da = d - (nd - a_nd), db = d - (nd - b_nd);
    int64_t ea = da >= 0 ? a_shape[da] : 1, eb = db >= 0 ? b_shape[db] : 1;
    sa[d] = (ea == 1 && out_shape[d] != 1) ? 0 : full_a;
    sb[d] = (eb == 1 && out_shape[d] != 1) ? 0 : full_b;
    full_a *= ea;
    full_b *= eb;
  }
  // collapse: merge dim d into d+1 when both operands are contiguous across the pair
  p.nd = 0;
  for (int64_t d = 0; d < nd; ++d) {
    if (out_shape[d] == 1) continue;
    if (p.nd > 0) {
      int k = p.nd - 1;
      bool ca = sa[d] == p.stride_a[k] * p.shape[k] || (sa[d] == 0 && p.stride_a[k] == 0);
      bool cb = sb[d] == p.stride_b[k] * p.shape[k] || (sb[d] == 0 && p.stride_b[k] == 0);
      if (ca && cb) {  // previous dim k is outer: becomes merged with d
        p.shape[k] *= out_shape[d];
        p.stride_a[k] = sa[d];
        p.stride_b[k] = sb[d];
        continue;
      }
    }
    p.shape[p.nd] = out_shape[d];
    p.stride_a[p.nd] = sa[d];
    p.stride_b[p.nd] = sb[d];
    ++p.nd;
  }
  if (p.nd == 0) {
    p.nd = 1;
    p.shape[0] = 1;
    p.stride_a[0] = p.stride_b[0] = 0;
  }
}

// Rows [row_begin, row_end) of one sample planned by `p`. One function per (op, type), chosen once
// per call: the driver (planning, grouping, the parallel loop) is the same code for all of them.
using BinaryRows = void (*)(const Plan& p, const void* a, const void* b, void* out, int64_t row_begin,
                            int64_t row_end);

template <int OP, typename T, typename Out>
void binary_rows(const Plan& p, const void* a_data, const void* b_data, void* out_data, int64_t row_begin,
                 int64_t row_end) {
  auto* a = static_cast<const T*>(a_data);
  auto* b = static_cast<const T*>(b_data);
  auto* out = static_cast<Out*>(out_data);
  int last = p.nd - 1;
  int64_t inner = p.shape[last], sa = p.stride_a[last], sb = p.stride_b[last];
  for (int64_t r = row_begin; r < row_end; ++r) {
    int64_t off_a = 0, off_b = 0, rem = r;
    for (int d = last - 1; d >= 0; --d) {
      int64_t idx = rem % p.shape[d];
      rem /= p.shape[d];
      off_a += idx * p.stride_a[d];
      off_b += idx * p.stride_b[d];
    }
    const T* pa = a + off_a;
    const T* pb = b + off_b;
    Out* po = out + r * inner;
    if (sa == 1 && sb == 1) {
      for (int64_t i = 0; i < inner; ++i) po[i] = apply_binary<OP, T>(pa[i], pb[i]);
    } else if (sa == 1 && sb == 0) {
      T vb = *pb;
      for (int64_t i = 0; i < inner; ++i) po[i] = apply_binary<OP, T>(pa[i], vb);
    } else if (sa == 0 && sb == 1) {
      T va = *pa;
      for (int64_t i = 0; i < inner; ++i) po[i] = apply_binary<OP, T>(va, pb[i]);
    } else {
      for (int64_t i = 0; i < inner; ++i) po[i] = apply_binary<OP, T>(pa[i * sa], pb[i * sb]);
    }
  }
}

// A unit of work: rows [row_begin, row_end) of one sample. Small samples are grouped so that a
// task holds about kGrain elements; a batch of tiny samples then runs without waking workers.
struct RowTask {
  int64_t sample, row_begin, row_end;
};

void binary_batch(ThreadPool& pool, BinaryRows rows_of, const BatchView& a, const BatchView& b,
                  const BatchView& out) {
  int64_t n = out.num_samples;
  std::vector<Plan> plans(n);
  std::vector<RowTask> tasks;
  std::vector<int64_t> group_begin{0};  // tasks[group_begin[g] .. group_begin[g+1]) form work item g
  int64_t group_volume = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t ia = a.num_samples == 1 ? 0 : i, ib = b.num_samples == 1 ? 0 : i;
    make_plan(out.shape(i), out.ndim, a.shape(ia), a.ndim, b.shape(ib), b.ndim, plans[i]);
    const Plan& p = plans[i];
    int64_t vol = out.volume(i);
    if (vol == 0) continue;
    int64_t inner = p.shape[p.nd - 1], rows = vol / inner;
    int64_t rows_per_task = std::max<int64_t>(1, kGrain / inner);
    for (int64_t r = 0; r < rows; r += rows_per_task) {
      int64_t re = std::min(rows, r + rows_per_task);
      tasks.push_back({i, r, re});
      group_volume += (re - r) * inner;
      if (group_volume >= kGrain) {
        group_begin.push_back(static_cast<int64_t>(tasks.size()));
        group_volume = 0;
      }
    }
  }
  if (group_begin.back() != static_cast<int64_t>(tasks.size()))
    group_begin.push_back(static_cast<int64_t>(tasks.size()));
  auto run_group = [&](int64_t g) {
    for (int64_t t = group_begin[g]; t < group_begin[g + 1]; ++t) {
      const RowTask& task = tasks[t];
      int64_t i = task.sample;
      int64_t ia = a.num_samples == 1 ? 0 : i, ib = b.num_samples == 1 ? 0 : i;
      rows_of(plans[i], a.sample_bytes(ia), b.sample_bytes(ib), out.sample_bytes(i), task.row_begin, task.row_end);
    }
  };
  int64_t groups = static_cast<int64_t>(group_begin.size()) - 1;
  if (groups == 1) {
    run_group(0);
  } else {
    pool.parallel_for(groups, run_group);
  }
}

template <typename T>
BinaryRows binary_rows_of(int op) {
#define PENSTOCK_BIN(OPC) case OPC: return &binary_rows<OPC, T, T>;
#define PENSTOCK_CMP(OPC) case OPC: return &binary_rows<OPC, T, bool>;
  switch (op) {
    PENSTOCK_BIN(kAdd) PENSTOCK_BIN(kSub) PENSTOCK_BIN(kMul) PENSTOCK_BIN(kDiv)
    PENSTOCK_BIN(kFloorDiv) PENSTOCK_BIN(kMod) PENSTOCK_BIN(kPow) PENSTOCK_BIN(kMin)
    PENSTOCK_BIN(kMax) PENSTOCK_BIN(kBitAnd) PENSTOCK_BIN(kBitOr) PENSTOCK_BIN(kBitXor)
    PENSTOCK_BIN(kShl) PENSTOCK_BIN(kShr) PENSTOCK_BIN(kAtan2) PENSTOCK_BIN(kFPow)
    PENSTOCK_CMP(kEq) PENSTOCK_CMP(kNe) PENSTOCK_CMP(kLt) PENSTOCK_CMP(kLe)
    PENSTOCK_CMP(kGt) PENSTOCK_CMP(kGe)
    default: throw std::invalid_argument("unknown binary op " + std::to_string(op));
  }
#undef PENSTOCK_BIN
#undef PENSTOCK_CMP
}

}  // namespace

void binary(ThreadPool& pool, int op, int code,
            Array a, I64Array a_shapes, I64Array a_offsets,
            Array b, I64Array b_shapes, I64Array b_offsets,
            Array out, I64Array out_shapes, I64Array out_offsets) {
  if (code == static_cast<int>(DType::FLOAT16))
    throw std::invalid_argument("arithmetic on FLOAT16 is not supported on the CPU");
  BatchView va = make_batch_view(a, a_shapes, a_offsets, false);
  BatchView vb = make_batch_view(b, b_shapes, b_offsets, false);
  BatchView vo = make_batch_view(out, out_shapes, out_offsets, true);
  BinaryRows rows_of;
  PENSTOCK_DISPATCH_NUMERIC(code, T, rows_of = binary_rows_of<T>(op));
  binary_batch(pool, rows_of, va, vb, vo);
}

namespace {

// ---- unary ------------------------------------------------------------------------------

enum UnaryOp {
  kNeg, kAbs, kSqrt, kRsqrt, kCbrt, kExp, kLog, kLog2, kLog10, kFloor, kCeil,
  kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kTanh, kAsinh, kAcosh, kAtanh,
  kBitNot, kLogicalNot,
};

template <typename T>
inline T apply_unary(int op, T x) {
  if constexpr (std::is_same_v<T, bool>) {
    return op == kLogicalNot || op == kBitNot ? !x : x;
  } else if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case kNeg: return -x;
      case kAbs: return std::fabs(x);
      case kSqrt: return std::sqrt(x);
      case kRsqrt: return T(1) / std::sqrt(x);
      case kCbrt: return std::cbrt(x);
      case kExp: return std::exp(x);
      case kLog: return std::log(x);
      case kLog2: return std::log2(x);
      case kLog10: return std::log10(x);
      case kFloor: return std::floor(x);
      case kCeil: return std::ceil(x);
      case kSin: return std::sin(x);
      case kCos: return std::cos(x);
      case kTan: return std::tan(x);
      case kAsin: return std::asin(x);
      case kAcos: return std::acos(x);
      case kAtan: return std::atan(x);
      case kSinh: return std::sinh(x);
      case kCosh: return std::cosh(x);
      case kTanh: return std::tanh(x);
      case kAsinh: return std::asinh(x);
      case kAcosh: return std::acosh(x);
      case kAtanh: return std::atanh(x);
      default: throw std::invalid_argument("unary op not defined for floats");
    }
  } else {
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case kNeg: return T(U(0) - U(x));
      case kAbs: if constexpr (std::is_signed_v<T>) return x < 0 ? T(U(0) - U(x)) : x; else return x;
      case kBitNot: return T(~x);
      case kLogicalNot: return T(x == 0);
      case kFloor: case kCeil: return x;
      default: throw std::invalid_argument("unary op not defined for integers");
    }
  }
}

}  // namespace

void unary(ThreadPool& pool, int op, int code, Array src, Array dst) {
  if (src.size() != dst.size()) throw std::invalid_argument("unary: buffer sizes differ");
  if (code == static_cast<int>(DType::FLOAT16))
    throw std::invalid_argument("arithmetic on FLOAT16 is not supported on the CPU");
  const void* s = src.data();
  void* d = dst.mutable_data();
  int64_t n = src.size();
  PENSTOCK_DISPATCH_NUMERIC(code, T, {
    apply_unary<T>(op, T(0));  // validates op for this type before the parallel loop
    pool.parallel_range(n, kGrain, [&](int64_t b, int64_t e) {
      auto* in = static_cast<const T*>(s);
      auto* out = static_cast<T*>(d);
      for (int64_t i = b; i < e; ++i) out[i] = apply_unary<T>(op, in[i]);
    });
  });
}

I64Array binary_descriptors(I64Array out_shapes, I64Array out_offsets, I64Array a_shapes, I64Array a_offsets,
                            I64Array b_shapes, I64Array b_offsets) {
  constexpr int64_t kMaxDims = 8, kWidth = 4 + 3 * kMaxDims;
  const int64_t n = out_shapes.ndim() == 2 ? out_shapes.shape(0) : -1, nd = n >= 0 ? out_shapes.shape(1) : 0;
  auto rows = [n](const Array& a, int64_t ndim) {
    return a.ndim() == ndim && (a.shape(0) == n || a.shape(0) == 1);
  };
  if (n < 0 || nd > kMaxDims || out_offsets.size() != n || !rows(a_shapes, 2) || !rows(b_shapes, 2) ||
      !rows(a_offsets, 1) || !rows(b_offsets, 1) || a_shapes.shape(1) > nd || b_shapes.shape(1) > nd)
    throw std::invalid_argument("binary_descriptors: output shapes [N, nd <= 8] and offsets [N]; operand shapes "
                                "[N or 1, <= nd] and offsets [N or 1]");
  auto desc = I64Array::empty({n, kWidth});
  for (int64_t i = 0; i < n; ++i) {
    int64_t* row = desc.mutable_data() + kWidth * i;
    const int64_t* out = out_shapes.data() + nd * i;
    std::fill(row, row + kWidth, 0);
    int64_t volume = 1;
    for (int64_t d = 0; d < kMaxDims; ++d) {
      row[4 + d] = d < nd ? out[d] : 1;
      if (d < nd) volume *= out[d];
    }
    row[0] = out_offsets.data()[i], row[1] = volume;
    const std::pair<const I64Array*, const I64Array*> operands[2] = {{&a_shapes, &a_offsets}, {&b_shapes, &b_offsets}};
    for (int k = 0; k < 2; ++k) {
      const I64Array &shapes = *operands[k].first, &offsets = *operands[k].second;
      const int64_t width = shapes.shape(1), lead = nd - width;
      const int64_t* shape = shapes.data() + width * (shapes.shape(0) == 1 ? 0 : i);
      row[2 + k] = offsets.data()[offsets.size() == 1 ? 0 : i];
      int64_t stride = 1;  // row-major over the operand's dims right-aligned with the output's
      for (int64_t d = nd - 1; d >= 0; --d) {
        const int64_t extent = d < lead ? 1 : shape[d - lead];
        row[12 + kMaxDims * k + d] = extent == 1 && out[d] != 1 ? 0 : stride;
        stride *= extent;
      }
    }
  }
  return desc;
}

}  // namespace penstock
