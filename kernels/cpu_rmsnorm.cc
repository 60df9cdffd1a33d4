// The fast CPU RMSNorm (see cpu_rmsnorm.h): two passes over each row, vectorized by the compiler.
//
// Pass 1 reads x (and r), forms h = x + r in fp32 and the row's sum of squares. Pass 2 reads x (and
// r) again, still in L1/L2 (a 4096-wide fp32 row with its residual is 32 KiB), recomputes the same
// h, and writes residual_out = round(h) and y = h * inv_rms * (weight_offset + w). Recomputing h
// instead of parking it in a scratch row costs a few vector adds, needs no thread-local buffer, and
// keeps in-place calls right: pass 1 writes nothing, and pass 2 reads element i before it writes
// element i, so output may equal input and residual_out may equal residual. Pass 2 of a row runs in
// the same loop as pass 1 of the next row (Sweep below), so that reads and writes stream together
// as in memcpy.
//
// Multiversioning: RowsKernel below is compiled three times (x86-64-v4 = AVX-512 F/BW/DQ/VL,
// x86-64-v3 = AVX2+FMA+F16C, baseline SSE2) and an ifunc picks one at load time. Everything it
// calls is inlined into it, so each clone carries its own vectorized copy of the row loops and the
// dtype.h conversions.
#include "kernels/cpu_rmsnorm.h"

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"

namespace normd {
namespace {

// Element codecs: the storage type of a dtype and its exact widening / rounding conversions.
struct F32Codec {
  using Storage = float;
  static float Load(float v) { return v; }
  static float Store(float v) { return v; }
};
struct F16Codec {
  using Storage = uint16_t;
  static float Load(uint16_t v) { return Float16ToFloat(v); }
  static uint16_t Store(float v) { return FloatToFloat16(v); }
};
struct BF16Codec {
  using Storage = uint16_t;
  static float Load(uint16_t v) { return BFloat16ToFloat(v); }
  static uint16_t Store(float v) { return FloatToBFloat16(v); }
};

// One row's tensors, already offset to the row.
template <class T>
struct Row {
  const typename T::Storage* x = nullptr;
  const typename T::Storage* r = nullptr;  // null without a residual
  typename T::Storage* y = nullptr;
  typename T::Storage* r_out = nullptr;
};

// What every row of a segment shares.
template <class W>
struct RowConstants {
  const typename W::Storage* w;
  size_t hidden;
  float weight_offset;
};

template <class T, bool kResidual>
[[gnu::always_inline]] inline float LoadH(const Row<T>& row, size_t i) {
  float h = T::Load(row.x[i]);
  if constexpr (kResidual) h += T::Load(row.r[i]);
  return h;
}

// Element i of pass 2. h is recomputed rather than kept from pass 1 (see the top of the file).
template <class T, class W, bool kResidual>
[[gnu::always_inline]] inline void ScaleOne(const Row<T>& row, float inv_rms,
                                            const RowConstants<W>& c, size_t i) {
  const float h = LoadH<T, kResidual>(row, i);
  if constexpr (kResidual) row.r_out[i] = T::Store(h);
  row.y[i] = T::Store(h * inv_rms * (c.weight_offset + W::Load(c.w[i])));
}

// The sum of squares runs in kLanes independent partial sums: a single vector accumulator chains
// every FMA on the previous one (4 cycles each), which held pass 1 to a quarter of the load rate.
// 64 lanes are 4 AVX-512 or 8 AVX2 registers, enough to cover the FMA latency on two FMA pipes.
constexpr size_t kLanes = 64;

// One sweep over the columns that does pass 2 of row `cur` (when kScale) together with pass 1 of
// row `next` (when kSum), and returns next's sum of squares. Fusing them is what makes the kernel
// stream like memcpy: a row-at-a-time kernel reads only in pass 1 and writes only in pass 2, and
// one core cannot keep enough misses in flight to overlap the two; here every iteration reads the
// next row from DRAM while it writes the current one (whose x and r are still in L1/L2 from its own
// pass 1). The loops carry `omp simd` (honoured through -fopenmp-simd): it lets the sum reassociate
// into lanes without -ffast-math, and tells the compiler that the stores cannot feed later loads,
// which is what in-place calls need (output == input, residual_out == residual: element i is read,
// then written).
template <class T, class W, bool kResidual, bool kScale, bool kSum>
[[gnu::always_inline]] inline float Sweep(const Row<T>& cur, float inv_rms, const Row<T>& next,
                                          const RowConstants<W>& c) {
  float partial[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= c.hidden; i += kLanes) {
#pragma omp simd
    for (size_t lane = 0; lane < kLanes; ++lane) {
      if constexpr (kScale) ScaleOne<T, W, kResidual>(cur, inv_rms, c, i + lane);
      if constexpr (kSum) {
        const float h = LoadH<T, kResidual>(next, i + lane);
        partial[lane] += h * h;
      }
    }
  }
  float sum_squares = 0.0f;
#pragma omp simd reduction(+ : sum_squares)
  for (size_t j = i; j < c.hidden; ++j) {
    if constexpr (kScale) ScaleOne<T, W, kResidual>(cur, inv_rms, c, j);
    if constexpr (kSum) {
      const float h = LoadH<T, kResidual>(next, j);
      sum_squares += h * h;
    }
  }
#pragma omp simd reduction(+ : sum_squares)
  for (size_t lane = 0; lane < kLanes; ++lane) sum_squares += partial[lane];
  return sum_squares;
}

template <class T, class W, bool kResidual>
[[gnu::always_inline]] inline void NormalizeRows(int64_t hidden, const RmsNormSegment& s,
                                                 int64_t row_begin, int64_t row_end) {
  using Storage = typename T::Storage;
  const RowConstants<W> c{static_cast<const typename W::Storage*>(s.weight),
                          static_cast<size_t>(hidden), s.weight_offset};
  auto row_at = [&](int64_t row) {
    const size_t base = static_cast<size_t>(row) * c.hidden;
    Row<T> r;
    r.x = static_cast<const Storage*>(s.input) + base;
    r.y = static_cast<Storage*>(s.output) + base;
    if constexpr (kResidual) {
      r.r = static_cast<const Storage*>(s.residual) + base;
      r.r_out = static_cast<Storage*>(s.residual_out) + base;
    }
    return r;
  };
  Row<T> cur = row_at(row_begin);
  float sum_squares = Sweep<T, W, kResidual, false, true>(Row<T>{}, 0.0f, cur, c);
  for (int64_t row = row_begin; row < row_end; ++row) {
    // sqrt and divide are correctly rounded here (no -ffast-math); eps sits inside the root.
    const float inv_rms = 1.0f / std::sqrt(sum_squares / static_cast<float>(hidden) + s.eps);
    if (row + 1 == row_end) {
      Sweep<T, W, kResidual, true, false>(cur, inv_rms, Row<T>{}, c);
      return;
    }
    const Row<T> next = row_at(row + 1);
    sum_squares = Sweep<T, W, kResidual, true, true>(cur, inv_rms, next, c);
    cur = next;
  }
}

// Picks the residual variant and the weight codec (fp32 or the input's own) for input codec T.
template <class T>
[[gnu::always_inline]] inline void DispatchWeight(int64_t hidden, const RmsNormSegment& s,
                                                  int64_t row_begin, int64_t row_end) {
  const bool residual = s.residual != nullptr;
  if (s.weight_dtype == DType::kFloat32) {
    residual ? NormalizeRows<T, F32Codec, true>(hidden, s, row_begin, row_end)
             : NormalizeRows<T, F32Codec, false>(hidden, s, row_begin, row_end);
  } else {
    residual ? NormalizeRows<T, T, true>(hidden, s, row_begin, row_end)
             : NormalizeRows<T, T, false>(hidden, s, row_begin, row_end);
  }
}

// The one multiversioned function. The dispatch runs once per call, not per element.
// Not under ThreadSanitizer: the clones' ifunc resolver runs during relocation, before the TSan runtime
// is up, and every binary linking the kernels segfaulted at start (gcc 12, `tsan` preset).
#if defined(__SANITIZE_THREAD__)
#define NORMD_ROWS_KERNEL_CLONES
#else
#define NORMD_ROWS_KERNEL_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
NORMD_ROWS_KERNEL_CLONES void RowsKernel(
    DType dtype, int64_t hidden, const RmsNormSegment& s, int64_t row_begin, int64_t row_end) {
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

}  // namespace

void RmsNormCpuRows(DType dtype, int64_t hidden, const RmsNormSegment& segment, int64_t row_begin,
                    int64_t row_end) {
  if (hidden <= 0 || row_begin >= row_end) return;
  RowsKernel(dtype, hidden, segment, row_begin, row_end);
}

void RmsNormCpu(const RmsNormLaunch& launch) {
  for (int32_t k = 0; k < launch.num_segments; ++k) {
    const RmsNormSegment& segment = launch.segments[k];
    RmsNormCpuRows(launch.dtype, launch.hidden, segment, 0, segment.rows);
  }
}

}  // namespace normd
