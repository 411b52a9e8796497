// Element-wise kernels (kernels/elementwise.cpp): cast with DALI's rounding and saturation,
// unary and binary arithmetic with C semantics (integers wrap, division truncates, x / 0 = 0),
// and binary ops with per-sample broadcasting.

template <typename T> struct Unsigned { typedef T type; };
template <> struct Unsigned<i8> { typedef u8 type; };
template <> struct Unsigned<i16> { typedef u16 type; };
template <> struct Unsigned<i32> { typedef u32 type; };
template <> struct Unsigned<i64> { typedef u64 type; };

// ---- cast: convert_sat (common.cuh) --------------------------------------------------------
// float16 goes through float
template <typename Out> struct FromHalf {
  __device__ static __forceinline__ Out conv(f16 v) { return convert_sat<Out, float>(half_to_float(v)); }
};
template <> struct FromHalf<f16> { __device__ static __forceinline__ f16 conv(f16 v) { return v; } };
template <typename In> struct ToHalf {
  __device__ static __forceinline__ f16 conv(In v) { return float_to_half(float(v)); }
};

template <typename Out, typename In> struct Cast {
  __device__ static __forceinline__ Out conv(In v) { return convert_sat<Out, In>(v); }
};
template <typename Out> struct Cast<Out, f16> {
  __device__ static __forceinline__ Out conv(f16 v) { return FromHalf<Out>::conv(v); }
};
template <typename In> struct Cast<f16, In> {
  __device__ static __forceinline__ f16 conv(In v) { return ToHalf<In>::conv(v); }
};
template <> struct Cast<f16, f16> {
  __device__ static __forceinline__ f16 conv(f16 v) { return v; }
};

// NAME##_I_O: dst[i] = CONV<O, I>::conv(src[i]), grid-stride
#define PENSTOCK_CONVERT(NAME, CONV, I, O)                                                        \
  extern "C" __global__ void NAME##_##I##_##O(const I* src, O* dst, i64 n) {                      \
    for (i64 i = i64(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += i64(gridDim.x) * blockDim.x) \
      dst[i] = CONV<O, I>::conv(src[i]);                                                          \
  }
#define PENSTOCK_CAST(I, O) PENSTOCK_CONVERT(cast, Cast, I, O)
#define PENSTOCK_CAST_FROM(I) \
  PENSTOCK_CAST(I, u8) PENSTOCK_CAST(I, u16) PENSTOCK_CAST(I, u32) PENSTOCK_CAST(I, u64) \
  PENSTOCK_CAST(I, i8) PENSTOCK_CAST(I, i16) PENSTOCK_CAST(I, i32) PENSTOCK_CAST(I, i64) \
  PENSTOCK_CAST(I, f16) PENSTOCK_CAST(I, f32) PENSTOCK_CAST(I, f64) PENSTOCK_CAST(I, bool)
PENSTOCK_CAST_FROM(u8) PENSTOCK_CAST_FROM(u16) PENSTOCK_CAST_FROM(u32) PENSTOCK_CAST_FROM(u64)
PENSTOCK_CAST_FROM(i8) PENSTOCK_CAST_FROM(i16) PENSTOCK_CAST_FROM(i32) PENSTOCK_CAST_FROM(i64)
PENSTOCK_CAST_FROM(f16) PENSTOCK_CAST_FROM(f32) PENSTOCK_CAST_FROM(f64) PENSTOCK_CAST_FROM(bool)

// ---- cast_trunc: crop and slice's conversion: convert_trunc (common.cuh) float -> integer, and
// float16 saturating (float_to_half_sat); only those pairs (elsewhere it equals cast) ----
template <typename Out, typename In> struct CastTrunc {
  __device__ static __forceinline__ Out conv(In v) { return convert_trunc<Out, In>(v); }
};
template <typename Out> struct CastTrunc<Out, f16> {
  __device__ static __forceinline__ Out conv(f16 v) { return convert_trunc<Out, float>(half_to_float(v)); }
};
template <typename In> struct CastTrunc<f16, In> {
  __device__ static __forceinline__ f16 conv(In v) { return float_to_half_sat(float(v)); }
};

#define PENSTOCK_CAST_TRUNC(I, O) PENSTOCK_CONVERT(cast_trunc, CastTrunc, I, O)
#define PENSTOCK_CAST_TRUNC_FROM(I) \
  PENSTOCK_CAST_TRUNC(I, u8) PENSTOCK_CAST_TRUNC(I, u16) PENSTOCK_CAST_TRUNC(I, u32) PENSTOCK_CAST_TRUNC(I, u64) \
  PENSTOCK_CAST_TRUNC(I, i8) PENSTOCK_CAST_TRUNC(I, i16) PENSTOCK_CAST_TRUNC(I, i32) PENSTOCK_CAST_TRUNC(I, i64)
PENSTOCK_CAST_TRUNC_FROM(f16) PENSTOCK_CAST_TRUNC_FROM(f32) PENSTOCK_CAST_TRUNC_FROM(f64)
PENSTOCK_CAST_TRUNC(u8, f16) PENSTOCK_CAST_TRUNC(u16, f16) PENSTOCK_CAST_TRUNC(u32, f16) PENSTOCK_CAST_TRUNC(u64, f16)
PENSTOCK_CAST_TRUNC(i8, f16) PENSTOCK_CAST_TRUNC(i16, f16) PENSTOCK_CAST_TRUNC(i32, f16) PENSTOCK_CAST_TRUNC(i64, f16)
PENSTOCK_CAST_TRUNC(f32, f16) PENSTOCK_CAST_TRUNC(f64, f16)

// ---- unary ----------------------------------------------------------------------------------
enum UnaryOp {
  kNeg, kAbs, kSqrt, kRsqrt, kCbrt, kExp, kLog, kLog2, kLog10, kFloor, kCeil,
  kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kTanh, kAsinh, kAcosh, kAtanh,
  kBitNot, kLogicalNot,
};

template <typename T> struct Unary {  // integers
  __device__ static __forceinline__ T apply(int op, T x) {
    typedef typename Unsigned<T>::type U;
    switch (op) {
      case kNeg: return T(U(0) - U(x));
      case kAbs: return (Kind<T>::is_signed && x < T(0)) ? T(U(0) - U(x)) : x;
      case kBitNot: return T(~x);
      case kLogicalNot: return T(x == T(0));
      default: return x;  // floor, ceil
    }
  }
};
template <> struct Unary<bool> {
  __device__ static __forceinline__ bool apply(int op, bool x) { return (op == kLogicalNot || op == kBitNot) ? !x : x; }
};
template <typename T> struct UnaryFloat {
  __device__ static __forceinline__ T apply(int op, T x) {
    switch (op) {
      case kNeg: return -x;
      case kAbs: return fabs(x);
      case kSqrt: return sqrt(x);
      case kRsqrt: return T(1) / sqrt(x);
      case kCbrt: return cbrt(x);
      case kExp: return exp(x);
      case kLog: return log(x);
      case kLog2: return log2(x);
      case kLog10: return log10(x);
      case kFloor: return floor(x);
      case kCeil: return ceil(x);
      case kSin: return sin(x);
      case kCos: return cos(x);
      case kTan: return tan(x);
      case kAsin: return asin(x);
      case kAcos: return acos(x);
      case kAtan: return atan(x);
      case kSinh: return sinh(x);
      case kCosh: return cosh(x);
      case kTanh: return tanh(x);
      case kAsinh: return asinh(x);
      case kAcosh: return acosh(x);
      case kAtanh: return atanh(x);
      default: return x;
    }
  }
};
template <> struct Unary<float> : UnaryFloat<float> {};
template <> struct Unary<double> : UnaryFloat<double> {};

#define PENSTOCK_UNARY(T)                                                                         \
  extern "C" __global__ void unary_##T(int op, const T* src, T* dst, i64 n) {                     \
    for (i64 i = i64(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += i64(gridDim.x) * blockDim.x) \
      dst[i] = Unary<T>::apply(op, src[i]);                                                       \
  }

// ---- binary ---------------------------------------------------------------------------------
enum BinaryOp {
  kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kMin, kMax,
  kEq, kNe, kLt, kLe, kGt, kGe, kBitAnd, kBitOr, kBitXor, kShl, kShr, kAtan2, kFPow,
};

template <typename T>
__device__ __forceinline__ T int_pow(T base, T e) {
  typedef typename Unsigned<T>::type U;
  if (Kind<T>::is_signed && e < T(0)) return T(0);  // DALI: 0 whatever the base (1 and -1 too), as on the CPU
  U result = 1, bb = U(base);
  for (T k = e; k > T(0); k = T(k >> 1)) {
    if (k & T(1)) result = U(result * bb);
    bb = U(bb * bb);
  }
  return T(result);
}

template <typename T> struct Binary {  // integers
  __device__ static __forceinline__ T apply(int op, T a, T b) {
    typedef typename Unsigned<T>::type U;
    const int bits = int(sizeof(T) * 8);
    switch (op) {
      case kAdd: return T(U(a) + U(b));
      case kSub: return T(U(a) - U(b));
      case kMul: return T(U(a) * U(b));
      case kDiv: case kFloorDiv: case kMod:
        if (b == T(0)) return T(0);
        if (Kind<T>::is_signed && b == T(-1)) return op == kMod ? T(0) : T(U(0) - U(a));
        return op == kMod ? T(a % b) : T(a / b);
      case kPow: return int_pow<T>(a, b);
      case kMin: return a < b ? a : b;
      case kMax: return a < b ? b : a;
      case kBitAnd: return T(a & b);
      case kBitOr: return T(a | b);
      case kBitXor: return T(a ^ b);
      case kShl: { i64 s = i64(b); return (s < 0 || s >= bits) ? T(0) : T(U(a) << s); }
      case kShr: {
        i64 s = i64(b);
        if (s < 0 || s >= bits) return (Kind<T>::is_signed && a < T(0)) ? T(-1) : T(0);
        return T(a >> s);
      }
      default: return T(0);
    }
  }
};
template <> struct Binary<bool> {
  __device__ static __forceinline__ bool apply(int op, bool a, bool b) {
    switch (op) {
      case kBitAnd: case kMul: case kMin: return a && b;
      case kBitOr: case kAdd: case kMax: return a || b;
      case kBitXor: case kSub: return a != b;
      case kShr: return a && !b;  // as integers: 1 >> 1 is 0
      default: return a;
    }
  }
};
template <typename T> struct BinaryFloat {
  __device__ static __forceinline__ T apply(int op, T a, T b) {
    switch (op) {
      case kAdd: return a + b;
      case kSub: return a - b;
      case kMul: return a * b;
      case kDiv: case kFloorDiv: return a / b;
      case kMod: return fmod(a, b);
      case kPow: case kFPow: return pow(a, b);
      case kMin: return a < b ? a : b;  // std::min(a, b)
      case kMax: return a < b ? b : a;  // std::max(a, b)
      case kAtan2: return atan2(a, b);
      default: return T(0);
    }
  }
};
template <> struct Binary<float> : BinaryFloat<float> {};
template <> struct Binary<double> : BinaryFloat<double> {};

template <typename T>
__device__ __forceinline__ bool compare(int op, T a, T b) {
  switch (op) {
    case kEq: return a == b;
    case kNe: return a != b;
    case kLt: return a < b;
    case kLe: return a <= b;
    case kGt: return a > b;
    default: return a >= b;
  }
}

// Per sample: output offset and volume, operand offsets, then nd output extents and each
// operand's strides (0 along broadcast dims).
enum BinaryDesc { kOut, kVol, kA, kB, kShape = 4, kStrideA = 12, kStrideB = 20, kBDesc = 28 };

template <typename T, typename Out, bool CMP>
__device__ void binary_batch(int op, const T* a, const T* b, Out* out, const i64* desc, const i64* block_start,
                             int n, int nd) {
  int s = find_sample(block_start, n, blockIdx.x);
  const i64* d = desc + s * kBDesc;
  i64 e = (i64(blockIdx.x) - block_start[s]) * blockDim.x + threadIdx.x;
  if (e >= d[kVol]) return;
  i64 rem = e, oa = d[kA], ob = d[kB];
  for (int dim = nd - 1; dim >= 0; --dim) {
    i64 x = rem % d[kShape + dim];
    rem /= d[kShape + dim];
    oa += x * d[kStrideA + dim];
    ob += x * d[kStrideB + dim];
  }
  if (CMP) out[d[kOut] + e] = Out(compare<T>(op, a[oa], b[ob]));
  else out[d[kOut] + e] = Out(Binary<T>::apply(op, a[oa], b[ob]));
}

#define PENSTOCK_BINARY(T)                                                                        \
  extern "C" __global__ void binary_##T(int op, const T* a, const T* b, T* out, const i64* desc,  \
                                        const i64* block_start, int n, int nd) {                  \
    binary_batch<T, T, false>(op, a, b, out, desc, block_start, n, nd);                           \
  }                                                                                               \
  extern "C" __global__ void compare_##T(int op, const T* a, const T* b, bool* out, const i64* desc, \
                                         const i64* block_start, int n, int nd) {                 \
    binary_batch<T, bool, true>(op, a, b, out, desc, block_start, n, nd);                         \
  }
#define PENSTOCK_ARITH(T) PENSTOCK_UNARY(T) PENSTOCK_BINARY(T)
PENSTOCK_ARITH(u8) PENSTOCK_ARITH(u16) PENSTOCK_ARITH(u32) PENSTOCK_ARITH(u64)
PENSTOCK_ARITH(i8) PENSTOCK_ARITH(i16) PENSTOCK_ARITH(i32) PENSTOCK_ARITH(i64)
PENSTOCK_ARITH(f32) PENSTOCK_ARITH(f64) PENSTOCK_ARITH(bool)
