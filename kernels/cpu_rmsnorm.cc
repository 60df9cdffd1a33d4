// The fast CPU RMSNorm (see cpu_rmsnorm.h), written with Highway (hwy) and compiled once per x86
// target Highway knows (AVX-512, AVX2, SSE4, ...); HWY_DYNAMIC_DISPATCH picks the best one the CPU
// has on the first call. This file is therefore included several times by hwy/foreach_target.h:
// everything between HWY_BEFORE_NAMESPACE and HWY_AFTER_NAMESPACE is per target, the part under
// HWY_ONCE exists once.
//
// The math is two passes over each row. Pass 1 reads x (and r), forms h = x + r in fp32 and the
// row's sum of squares. Pass 2 reads x (and r) again, still in L1/L2 (a 4096-wide fp32 row with its
// residual is 32 KiB), recomputes the same h, and writes residual_out = round(h) and
// y = (h * inv_rms) * (weight_offset + w). Recomputing h instead of parking it in a scratch row
// costs a few vector adds, needs no buffer, and keeps in-place calls right: pass 1 writes nothing,
// and pass 2 reads element i before it writes element i, so output may equal input and residual_out
// may equal residual.
//
// Why it is shaped the way it is (measured with bench/cpu; docs/PERFORMANCE.md, "The CPU backend's
// kernel against memory bandwidth"):
//  - Pass 2 of a row runs in the same loop as pass 1 of the next row. A row-at-a-time kernel reads
//    only in pass 1 and writes only in pass 2, and one core cannot keep enough misses in flight to
//    overlap them; fused, every iteration reads the next row from DRAM while it writes this one.
//  - The sum of squares runs in four vector accumulators: one accumulator chains every FMA on the
//    previous one and held pass 1 to a quarter of the load rate.
//  - Large outputs are written with non-temporal stores (Stream). An ordinary store first reads the
//    line it overwrites (read-for-ownership), so writing y cost a DRAM read as well as a write and
//    capped fp32 at about two thirds of memcpy. Small outputs keep ordinary stores: the server
//    reads them right back to build the response, and they should still be in cache then.
//  - The fp16/bf16 conversions are dtype.h's, bit for bit, as vector integer operations (Highway
//    1.0's bf16 DemoteTo truncates instead of rounding to nearest even). The compiler did not
//    vectorize the scalar versions well, which held bf16 to half of memcpy.
//
// Determinism: the lane every element's square lands in depends only on its column and the target,
// never on the addresses, so a row gives the same bits wherever it sits in memory (batched or not).
#include "kernels/cpu_rmsnorm.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/dtype.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu_rmsnorm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format: foreach_target.h must come before highway.h.
#include "hwy/cache_control.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
using DU32 = hn::RebindToUnsigned<DF>;
using DI32 = hn::RebindToSigned<DF>;
using DU16 = hn::Rebind<uint16_t, DF>;  // half-width: as many 16-bit lanes as DF has floats
using DU16Full = hn::Repartition<uint16_t, DF>;  // full width: twice as many 16-bit lanes

template <class D, class V, class T>
HWY_INLINE void StoreVector(bool stream, V v, D d, T* p) {
  if (stream) {
    hn::Stream(v, d, p);
  } else {
    hn::StoreU(v, d, p);
  }
}

// Element codecs: a dtype's storage type, and its widening / rounding conversions as scalars (for
// row heads and tails) and as vectors. The vector ones reproduce the scalar ones bit for bit. Store
// writes the N = Lanes(DF) elements of one vector, Store2 the 2N of two: the 16-bit types narrow a
// pair with one two-source permute (ConcatOdd / ConcatEven) instead of a pack and a lane fix-up per
// vector, which was a third of the bf16 kernel's instructions.
struct F32Codec {
  using Storage = float;
  static float LoadScalar(float v) { return v; }
  static float StoreScalar(float v) { return v; }
  static HWY_INLINE VF Load(const float* p) { return hn::LoadU(DF(), p); }
  static HWY_INLINE void Store(bool stream, VF v, float* p) { StoreVector(stream, v, DF(), p); }
  static HWY_INLINE void Store2(bool stream, VF lo, VF hi, float* p) {
    StoreVector(stream, lo, DF(), p);
    StoreVector(stream, hi, DF(), p + hn::Lanes(DF()));
  }
};

HWY_INLINE hn::Vec<DU32> LoadBits16(const uint16_t* p) {
  return hn::PromoteTo(DU32(), hn::LoadU(DU16(), p));
}

// Stores the low 16 bits of every 32-bit lane (each below 2^16, so the saturating narrowing is
// exact).
HWY_INLINE void StoreLowBits16(bool stream, hn::Vec<DU32> bits, uint16_t* p) {
  StoreVector(stream, hn::DemoteTo(DU16(), hn::BitCast(DI32(), bits)), DU16(), p);
}

// Stores one 16-bit half of every 32-bit lane of two vectors, lo's lanes first: the high halves
// (where bf16 rounding leaves its result) or the low ones (fp16's), with one two-source permute.
// The low halves must each be below 2^16 in value, as StoreLowBits16 needs on the one-lane target.
template <bool kHighHalves>
HWY_INLINE void StoreHalves16(bool stream, hn::Vec<DU32> lo, hn::Vec<DU32> hi, uint16_t* p) {
#if HWY_TARGET == HWY_SCALAR  // one lane: no permutes, and nothing to gain from them
  if constexpr (kHighHalves) {
    lo = hn::ShiftRight<16>(lo);
    hi = hn::ShiftRight<16>(hi);
  }
  StoreLowBits16(stream, lo, p);
  StoreLowBits16(stream, hi, p + 1);
#else
  const DU16Full d;
  if constexpr (kHighHalves) {
    StoreVector(stream, hn::ConcatOdd(d, hn::BitCast(d, hi), hn::BitCast(d, lo)), d, p);
  } else {
    StoreVector(stream, hn::ConcatEven(d, hn::BitCast(d, hi), hn::BitCast(d, lo)), d, p);
  }
#endif
}

struct BF16Codec {
  using Storage = uint16_t;
  static float LoadScalar(uint16_t v) { return BFloat16ToFloat(v); }
  static uint16_t StoreScalar(float v) { return FloatToBFloat16(v); }
  static HWY_INLINE VF Load(const uint16_t* p) {
    return hn::BitCast(DF(), hn::ShiftLeft<16>(LoadBits16(p)));
  }
  // dtype.h FloatToBFloat16 with the result left in the high 16 bits of each lane: add 0x7FFF plus
  // the lowest kept bit, keep NaN quiet. The low 16 bits are left over.
  static HWY_INLINE hn::Vec<DU32> RoundedHigh(VF v) {
    const DU32 du;
    const DI32 di;
    const auto u = hn::BitCast(du, v);
    const auto rounded =
        hn::Add(hn::Add(u, hn::Set(du, 0x7FFFu)), hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u)));
    const auto quiet_nan = hn::Or(u, hn::Set(du, 0x00400000u));
    // The magnitude is below 2^31, so a signed compare orders it as unsigned.
    const auto is_nan =
        hn::Gt(hn::BitCast(di, hn::And(u, hn::Set(du, 0x7FFFFFFFu))), hn::Set(di, 0x7F800000));
    return hn::IfThenElse(hn::RebindMask(du, is_nan), quiet_nan, rounded);
  }
  static HWY_INLINE void Store(bool stream, VF v, uint16_t* p) {
    StoreLowBits16(stream, hn::ShiftRight<16>(RoundedHigh(v)), p);
  }
  static HWY_INLINE void Store2(bool stream, VF lo, VF hi, uint16_t* p) {
    StoreHalves16<true>(stream, RoundedHigh(lo), RoundedHigh(hi), p);
  }
};

struct F16Codec {
  using Storage = uint16_t;
  static float LoadScalar(uint16_t v) { return Float16ToFloat(v); }
  static uint16_t StoreScalar(float v) { return FloatToFloat16(v); }
  // dtype.h Float16ToFloat: rebias by multiplying with 2^112, which also normalizes subnormals.
  static HWY_INLINE VF Load(const uint16_t* p) {
    const DF df;
    const DU32 du;
    const DI32 di;
    const auto bits = LoadBits16(p);
    const auto sign = hn::ShiftLeft<16>(hn::And(bits, hn::Set(du, 0x8000u)));
    const auto magnitude = hn::And(bits, hn::Set(du, 0x7FFFu));
    const auto at_mantissa = hn::ShiftLeft<13>(magnitude);
    const auto scaled = hn::Mul(hn::BitCast(df, at_mantissa), hn::Set(df, 0x1p112f));
    const auto inf_or_nan = hn::BitCast(df, hn::Or(at_mantissa, hn::Set(du, 0x7F800000u)));
    const auto special =
        hn::RebindMask(df, hn::Gt(hn::BitCast(di, magnitude), hn::Set(di, 0x7BFF)));
    const auto result = hn::IfThenElse(special, inf_or_nan, scaled);
    return hn::BitCast(df, hn::Or(hn::BitCast(du, result), sign));
  }
  // dtype.h FloatToFloat16, result in the low 16 bits of each lane: normal range by integer
  // rounding, subnormals by the FPU's rounding of a + 0.5f, then Inf for overflow and quiet NaN
  // with the payload's top bits.
  static HWY_INLINE hn::Vec<DU32> RoundedLow(VF v) {
    const DF df;
    const DU32 du;
    const DI32 di;
    const auto u = hn::BitCast(du, v);
    const auto sign = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 0x8000u));
    const auto a = hn::And(u, hn::Set(du, 0x7FFFFFFFu));
    const auto a_signed = hn::BitCast(di, a);  // below 2^31: signed compares order it as unsigned
    const auto lowest_kept = hn::And(hn::ShiftRight<13>(a), hn::Set(du, 1u));
    const auto normal = hn::ShiftRight<13>(hn::Add(
        hn::Add(hn::Sub(a, hn::Set(du, (127u - 15u) << 23)), hn::Set(du, 0x0FFFu)), lowest_kept));
    const auto subnormal = hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(df, a), hn::Set(df, 0.5f))),
                                   hn::Set(du, FloatBits(0.5f)));
    auto out = hn::IfThenElse(hn::RebindMask(du, hn::Lt(a_signed, hn::Set(di, 0x38800000))),
                              subnormal, normal);
    out = hn::IfThenElse(hn::RebindMask(du, hn::Gt(a_signed, hn::Set(di, 0x477FEFFF))),
                         hn::Set(du, 0x7C00u), out);
    const auto nan =
        hn::Or(hn::Set(du, 0x7E00u), hn::And(hn::ShiftRight<13>(a), hn::Set(du, 0x3FFu)));
    out = hn::IfThenElse(hn::RebindMask(du, hn::Gt(a_signed, hn::Set(di, 0x7F800000))), nan, out);
    return hn::Or(sign, out);
  }
  static HWY_INLINE void Store(bool stream, VF v, uint16_t* p) {
    StoreLowBits16(stream, RoundedLow(v), p);
  }
  static HWY_INLINE void Store2(bool stream, VF lo, VF hi, uint16_t* p) {
    StoreHalves16<false>(stream, RoundedLow(lo), RoundedLow(hi), p);
  }
};

// One row's tensors, already offset to the row. This and RowConstants travel by value: vector
// stores may alias anything, and through a reference every store made the compiler reload the
// pointers.
template <class T>
struct Row {
  const typename T::Storage* x = nullptr;
  const typename T::Storage* r = nullptr;  // null without a residual
  typename T::Storage* y = nullptr;
  typename T::Storage* r_out = nullptr;
};

// What every row of a segment shares: the hidden size and, per column, weight_offset + w already in
// fp32 (formed once per call instead of once per row and element).
struct RowConstants {
  const float* scale;
  size_t hidden;
};

template <class T, bool kResidual>
HWY_INLINE VF LoadH(Row<T> row, size_t i) {
  VF h = T::Load(row.x + i);
  if constexpr (kResidual) h = hn::Add(h, T::Load(row.r + i));
  return h;
}

template <class T, bool kResidual>
HWY_INLINE float LoadHScalar(Row<T> row, size_t i) {
  float h = T::LoadScalar(row.x[i]);
  if constexpr (kResidual) h += T::LoadScalar(row.r[i]);
  return h;
}

// Pass 2 for element i (scalar) or the N elements from i (vector).
template <class T, bool kResidual>
HWY_INLINE void ScaleScalar(Row<T> row, float inv_rms, RowConstants c, size_t i) {
  const float h = LoadHScalar<T, kResidual>(row, i);
  if constexpr (kResidual) row.r_out[i] = T::StoreScalar(h);
  row.y[i] = T::StoreScalar(h * inv_rms * c.scale[i]);
}

// Pass 2 for the N elements from i. stream_y / stream_r_out pick non-temporal stores; they are
// fixed per row, so the branches inside the stores are perfectly predicted.
template <class T, bool kResidual>
HWY_INLINE void ScaleVector(Row<T> row, VF inv_rms, RowConstants c, bool stream_y,
                            bool stream_r_out, size_t i) {
  const VF h = LoadH<T, kResidual>(row, i);
  if constexpr (kResidual) T::Store(stream_r_out, h, row.r_out + i);
  T::Store(stream_y, hn::Mul(hn::Mul(h, inv_rms), hn::LoadU(DF(), c.scale + i)), row.y + i);
}

// The same for the 2N elements from i.
template <class T, bool kResidual>
HWY_INLINE void ScaleVectorPair(Row<T> row, VF inv_rms, RowConstants c, bool stream_y,
                                bool stream_r_out, size_t i) {
  const size_t n = hn::Lanes(DF());
  const VF h0 = LoadH<T, kResidual>(row, i), h1 = LoadH<T, kResidual>(row, i + n);
  if constexpr (kResidual) T::Store2(stream_r_out, h0, h1, row.r_out + i);
  const VF y0 = hn::Mul(hn::Mul(h0, inv_rms), hn::LoadU(DF(), c.scale + i));
  const VF y1 = hn::Mul(hn::Mul(h1, inv_rms), hn::LoadU(DF(), c.scale + i + n));
  T::Store2(stream_y, y0, y1, row.y + i);
}

// Bytes a Stream of T must be aligned to: Store2 of a 16-bit type writes one full vector, as does
// Store of fp32, so this is the vector size either way.
template <class T>
constexpr size_t StreamAlignment() {
  return sizeof(float) * hn::MaxLanes(DF());
}

template <class T>
bool IsStreamAligned(const typename T::Storage* p) {
  return reinterpret_cast<uintptr_t>(p) % StreamAlignment<T>() == 0;
}

// Columns to handle one at a time before y + column is aligned for Stream (at most hidden).
template <class T>
size_t StreamPeel(const typename T::Storage* y, size_t hidden) {
  const size_t misaligned = reinterpret_cast<uintptr_t>(y) % StreamAlignment<T>();
  if (misaligned == 0) return 0;
  return std::min(hidden, (StreamAlignment<T>() - misaligned) / sizeof(typename T::Storage));
}

// One sweep over the columns that does pass 2 of row `cur` (when `scale`) together with pass 1 of
// row `next` (when `sum`) and returns next's sum of squares.
//
// Pass 2 starts with `peel` scalar columns so that its vector stores are aligned for Stream; pass 1
// always starts at column 0, so that which accumulator a column lands in is fixed by the column
// alone (see Determinism at the top). Vector block k of pass 1 goes to accumulator k % 4 while
// four whole blocks remain, later ones to accumulator 0.
template <class T, bool kResidual, bool kStream>
HWY_INLINE float Sweep(bool scale, const Row<T> cur, float inv_rms, bool sum, const Row<T> next,
                       const Row<T> after, const RowConstants c) {
  const DF df;
  const size_t n = hn::Lanes(df);
  const size_t hidden = c.hidden;
  const size_t peel = scale && kStream ? StreamPeel<T>(cur.y, hidden) : 0;
  const bool stream_r_out = kResidual && scale && kStream && IsStreamAligned<T>(cur.r_out + peel);
  const size_t scale_blocks = scale ? (hidden - peel) / n : 0;
  const size_t sum_blocks = sum ? hidden / n : 0;
  const size_t sum_blocks4 = sum_blocks / 4 * 4;
  const VF inv_rms_v = hn::Set(df, inv_rms);

  for (size_t i = 0; i < peel; ++i) ScaleScalar<T, kResidual>(cur, inv_rms, c, i);

  VF acc0 = hn::Zero(df), acc1 = hn::Zero(df), acc2 = hn::Zero(df), acc3 = hn::Zero(df);
  // Pass 1 over the four vector blocks from column m, one accumulator each.
  auto sum_four = [&](size_t m) HWY_ATTR {
    const VF h0 = LoadH<T, kResidual>(next, m), h1 = LoadH<T, kResidual>(next, m + n);
    const VF h2 = LoadH<T, kResidual>(next, m + 2 * n), h3 = LoadH<T, kResidual>(next, m + 3 * n);
    acc0 = hn::MulAdd(h0, h0, acc0);
    acc1 = hn::MulAdd(h1, h1, acc1);
    acc2 = hn::MulAdd(h2, h2, acc2);
    acc3 = hn::MulAdd(h3, h3, acc3);
  };
  const size_t fused4 = std::min(scale_blocks / 4 * 4, sum_blocks4);
  size_t k = 0;
  for (; k < fused4; k += 4) {
    const size_t s = peel + k * n, m = k * n;
    if (after.x != nullptr) {
      for (size_t line = 0; line < 4 * n * sizeof(typename T::Storage); line += 64) {
        hwy::Prefetch(reinterpret_cast<const uint8_t*>(after.x + m) + line);
        if constexpr (kResidual)
          hwy::Prefetch(reinterpret_cast<const uint8_t*>(after.r + m) + line);
      }
    }
    ScaleVectorPair<T, kResidual>(cur, inv_rms_v, c, kStream, stream_r_out, s);
    ScaleVectorPair<T, kResidual>(cur, inv_rms_v, c, kStream, stream_r_out, s + 2 * n);
    sum_four(m);
  }
  // Whatever one pass has left after the fused part.
  for (size_t j = k; j < scale_blocks; ++j) {
    ScaleVector<T, kResidual>(cur, inv_rms_v, c, kStream, stream_r_out, peel + j * n);
  }
  for (size_t j = k; j < sum_blocks4; j += 4) sum_four(j * n);
  for (size_t j = sum_blocks4; j < sum_blocks; ++j) {
    const VF h = LoadH<T, kResidual>(next, j * n);
    acc0 = hn::MulAdd(h, h, acc0);
  }
  // Scalar tails.
  for (size_t i = peel + scale_blocks * n; scale && i < hidden; ++i)
    ScaleScalar<T, kResidual>(cur, inv_rms, c, i);
  if (!sum) return 0.0f;
  float sum_squares =
      hn::GetLane(hn::SumOfLanes(df, hn::Add(hn::Add(acc0, acc1), hn::Add(acc2, acc3))));
  for (size_t i = sum_blocks * n; i < hidden; ++i) {
    const float h = LoadHScalar<T, kResidual>(next, i);
    sum_squares += h * h;
  }
  return sum_squares;
}

template <class T, bool kResidual, bool kStream>
void NormalizeRows(int64_t hidden, const RmsNormSegment& s, int64_t row_begin, int64_t row_end,
                   const RowConstants& c) {
  using Storage = typename T::Storage;
  auto row_at = [&](int64_t row) {
    Row<T> r;
    if (row >= row_end) return r;  // past the last row: null pointers, nothing read
    const size_t base = static_cast<size_t>(row) * c.hidden;
    r.x = static_cast<const Storage*>(s.input) + base;
    r.y = static_cast<Storage*>(s.output) + base;
    if constexpr (kResidual) {
      r.r = static_cast<const Storage*>(s.residual) + base;
      r.r_out = static_cast<Storage*>(s.residual_out) + base;
    }
    return r;
  };
  // Software prefetch of the row after the one being summed: the hardware prefetchers stop at page
  // boundaries, and a bf16 row of 4096 is only two pages. It took fp32 from 68% to over 80% of
  // memcpy.
  Row<T> cur = row_at(row_begin);
  float sum_squares =
      Sweep<T, kResidual, kStream>(false, Row<T>{}, 0.0f, true, cur, row_at(row_begin + 1), c);
  for (int64_t row = row_begin; row < row_end; ++row) {
    // sqrt and divide are correctly rounded here (no -ffast-math); eps sits inside the root.
    const float inv_rms = 1.0f / std::sqrt(sum_squares / static_cast<float>(hidden) + s.eps);
    const Row<T> next = row_at(row + 1);
    sum_squares = Sweep<T, kResidual, kStream>(true, cur, inv_rms, next.x != nullptr, next,
                                               row_at(row + 2), c);
    cur = next;
  }
  if constexpr (kStream) hwy::FlushStream();
}

// Outputs at least this large (per call) are written with non-temporal stores; see the top of the
// file. 16 MiB is past any one core's share of a server L3, so the lines would be gone by the time
// the response is built anyway.
constexpr size_t kStreamMinOutputBytes = size_t{16} << 20;

template <class T, bool kResidual>
void ChooseStores(int64_t hidden, const RmsNormSegment& s, int64_t row_begin, int64_t row_end,
                  const RowConstants& c) {
  using Storage = typename T::Storage;
  const size_t output_bytes =
      static_cast<size_t>(row_end - row_begin) * static_cast<size_t>(hidden) * sizeof(Storage);
  // Stream needs each vector aligned; a peel aligns y unless it is not even element-aligned.
  const bool element_aligned = reinterpret_cast<uintptr_t>(s.output) % sizeof(Storage) == 0;
  if (output_bytes >= kStreamMinOutputBytes && element_aligned) {
    NormalizeRows<T, kResidual, true>(hidden, s, row_begin, row_end, c);
  } else {
    NormalizeRows<T, kResidual, false>(hidden, s, row_begin, row_end, c);
  }
}

// weight_offset + w in fp32 for every column, into a buffer of the calling thread (it only grows,
// to at most --max-hidden floats). The same fp32 add the per-element formula did, so no bit
// changes.
template <class W>
const float* WeightPlusOffset(const RmsNormSegment& s, size_t hidden) {
  thread_local std::vector<float> buffer;
  if (buffer.size() < hidden) buffer.resize(hidden);
  const auto* w = static_cast<const typename W::Storage*>(s.weight);
  const DF df;
  const size_t n = hn::Lanes(df);
  const VF offset = hn::Set(df, s.weight_offset);
  size_t i = 0;
  for (; i + n <= hidden; i += n)
    hn::StoreU(hn::Add(offset, W::Load(w + i)), df, buffer.data() + i);
  for (; i < hidden; ++i) buffer[i] = s.weight_offset + W::LoadScalar(w[i]);
  return buffer.data();
}

// Picks the residual variant for input codec T, after folding the weight (fp32 or T) into fp32.
template <class T>
void DispatchWeight(int64_t hidden, const RmsNormSegment& s, int64_t row_begin, int64_t row_end) {
  const size_t h = static_cast<size_t>(hidden);
  const RowConstants c{s.weight_dtype == DType::kFloat32 ? WeightPlusOffset<F32Codec>(s, h)
                                                         : WeightPlusOffset<T>(s, h),
                       h};
  if (s.residual != nullptr) {
    ChooseStores<T, true>(hidden, s, row_begin, row_end, c);
  } else {
    ChooseStores<T, false>(hidden, s, row_begin, row_end, c);
  }
}

void RowsKernel(DType dtype, int64_t hidden, const RmsNormSegment& s, int64_t row_begin,
                int64_t row_end) {
  switch (dtype) {
    case DType::kFloat32:
      DispatchWeight<F32Codec>(hidden, s, row_begin, row_end);
      return;
    case DType::kFloat16:
      DispatchWeight<F16Codec>(hidden, s, row_begin, row_end);
      return;
    case DType::kBFloat16:
      DispatchWeight<BF16Codec>(hidden, s, row_begin, row_end);
      return;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace normd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace normd {

HWY_EXPORT(RowsKernel);

void RmsNormCpuRows(DType dtype, int64_t hidden, const RmsNormSegment& segment, int64_t row_begin,
                    int64_t row_end) {
  if (hidden <= 0 || row_begin >= row_end) return;
  HWY_DYNAMIC_DISPATCH(RowsKernel)(dtype, hidden, segment, row_begin, row_end);
}

void RmsNormCpu(const RmsNormLaunch& launch) {
  for (int32_t k = 0; k < launch.num_segments; ++k) {
    const RmsNormSegment& segment = launch.segments[k];
    RmsNormCpuRows(launch.dtype, launch.hidden, segment, 0, segment.rows);
  }
}

}  // namespace normd
#endif  // HWY_ONCE
