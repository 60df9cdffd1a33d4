// RmsNormRowsKernel: a group of G threads owns a row; thread t of the group handles the row's
// 16-byte vectors t, t + G, ... (kN of them). Internal to the CUDA library.
//
// Two kinds share it (kernel_config.h):
//  - kRows (kReload false): the row stays in registers across the reduction and is read from
//    device memory once; the weight is read after the reduction (fewer registers live while the
//    row loads). The kind that also takes the element path.
//  - kReload: the first pass sums the squares and drops the row (its lines marked to be kept in L1
//    and L2), the second reads it again, mostly from L1, for the output. Far fewer registers (32
//    for up to two vectors per thread), so a multiprocessor holds up to 2048 threads: the
//    occupancy and the few instructions per byte of the kernel torch.compile's Inductor generates.
// G is a power of two up to 32 (several rows per warp) or whole warps up to the build's block
// limit; blocks hold rows_per_block row groups. Rows come from one segment by value or from a
// segment table. In place is safe: each thread reads its elements before it writes them, and no
// other thread touches them.
#ifndef NORMD_KERNELS_CUDA_ROWS_KERNEL_CUH_
#define NORMD_KERNELS_CUDA_ROWS_KERNEL_CUH_

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/kernel_limits.h"
#include "kernels/cuda/row_body.cuh"

namespace normd::cuda::internal {

// Register caps, through the blocks per multiprocessor each build promises (__launch_bounds__).
// Held rows: plain rows of up to four vectors per thread at 64 registers (two 512-thread blocks:
// ptxas spills a few bytes to L1 but twice the rows are in flight); the others up to 128.
// Reloaded rows: 32 registers (two 1024-thread blocks) for one vector, for two without a residual,
// and for four without a residual with the weight read per vector; two vectors with a residual
// get 40 (three 512-thread blocks: under 32 they spilled); four with a residual or fp32 weights
// under a 16-bit row get 64 (one 1024-thread block).
template <typename T, int kN, bool kResidual, WeightKind kW, bool kReload>
struct RowsBuild {
  static constexpr bool kWideReload = kN == 4 && (kResidual || kWeightVecs<T, kW> > 1);
  static constexpr int kMaxThreads = !kReload                 ? kRowsMaxThreads
                                     : (kN == 2 && kResidual) ? kReloadTwoWithResidualMaxThreads
                                                              : kReloadMaxThreads;
  static constexpr int kMinBlocks = !kReload                 ? (!kResidual && kN <= 4 ? 2 : 1)
                                    : (kN == 2 && kResidual) ? 3
                                    : kWideReload            ? 1
                                                             : 2;
  // Reloaded rows read the weight with the second pass where registers allow, else per vector.
  static constexpr bool kReloadHoldsWeights = kN < 4 && !kResidual && kWeightVecs<T, kW> == 1;
};

// Which rows a build takes. kVectorSingle: one segment by value on the vector path, its fields
// read in place from the kernel parameter (constant memory) rather than held in registers (the
// reload builds' 32 registers then hold the row and little else). kVectorContiguous: a
// contiguous table (KernelParams::contiguous) on the vector path: the row's data as kVectorSingle
// reads it, its weight and eps from a copy of the table entry, found with no device memory read
// and loaded while the row is on its way. kVectorAny: any table, every segment on the vector
// path. kAnyPath: one segment or any table, also on the element path, chosen per segment at run
// time (its code in the same build cost the vector path registers, hence the separate build).
enum class RowsPath { kVectorSingle, kVectorContiguous, kVectorAny, kAnyPath };

template <typename T, int kN, bool kResidual, WeightKind kW, bool kReload, RowsPath kPath>
__global__ void __launch_bounds__(
    RowsBuild<T, kN, kResidual, kW, kReload>::kMaxThreads,
    BlocksPerSm(RowsBuild<T, kN, kResidual, kW, kReload>::kMinBlocks,
                RowsBuild<T, kN, kResidual, kW, kReload>::kMaxThreads))
    RmsNormRowsKernel(const __grid_constant__ KernelParams p) {
  using Build = RowsBuild<T, kN, kResidual, kW, kReload>;
  constexpr bool kSingle = kPath == RowsPath::kVectorSingle;
  constexpr bool kContiguous = kPath == RowsPath::kVectorContiguous;
  constexpr bool kElements = kPath == RowsPath::kAnyPath;
  __shared__ float warp_sums[Build::kMaxThreads / 32];
  __shared__ float block_inv_rms;

  const int G = p.threads_per_row;
  const bool one_row_per_block = p.rows_per_block == 1;
  const int group = one_row_per_block ? 0 : static_cast<int>(threadIdx.x) / G;
  const int t = static_cast<int>(threadIdx.x) - group * G;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * p.rows_per_block + group;
  const int H = static_cast<int>(p.hidden);
  const int nv = H / kVecElems<T>;  // vectors per row (vector path)
  const ThreadVectors vectors{t, G, nv};
  const ThreadVectors elements{t, G, H};

  // The next kernel may begin its prologue now; its own wait still covers this grid's writes.
  GridDependencyLaunchDependents();
  GridDependencyWait();

  // The row's segment: the kernel parameter's, or a copy of its table entry (ReadSegment).
  // kVectorContiguous reads the row's data as kVectorSingle does and only its weight and eps from
  // the entry, which then loads while the row is on its way.
  RmsNormSegment entry;
  int64_t local = row;
  bool active;
  if constexpr (kSingle) {
    active = row < p.single.rows;
  } else if constexpr (kContiguous) {
    active = row < p.total_rows;
    if (active) entry = ReadSegment(p.table + FindSegment(p, row));
  } else {
    active = ResolveRow(p, row, entry, local);
  }
  const bool vec = active && (!kElements || CanVectorize<T>(entry, H));
  // `seg` gives the row's data, `norm` its weight and eps.
  const RmsNormSegment& seg = kSingle || kContiguous ? p.single : entry;
  const RmsNormSegment& norm = kSingle ? p.single : entry;
  const bool has_residual = kResidual && active && seg.residual != nullptr;
  const int64_t row_base = local * nv;   // in vectors
  const int64_t row_offset = local * H;  // in elements

  constexpr RowRead kFirstRead = kReload ? RowRead::kKeep : RowRead::kPlain;
  RowRegisters<T, kN, kResidual> held;
  if (vec) {
    held.template Load<kFirstRead>(seg, row_base, vectors, has_residual,
                                   RowReadPolicy<kFirstRead>());
  } else if (kElements && active) {
    held.LoadElements(seg, row_offset, elements, has_residual);
  } else {
    held.Clear();
  }
  const float sum_squares = held.AddSquares(0.0f);

  float inv_rms;
  if (one_row_per_block && G > 32) {
    // One row per block: warp 0 finishes the sum and computes the scale once for the block.
    inv_rms = BlockInvRms(sum_squares, G, warp_sums, &block_inv_rms, static_cast<float>(H),
                          active ? norm.eps : 1.0f);
  } else {
    inv_rms = InvRms(GroupSum(sum_squares, G, warp_sums), H, active ? norm.eps : 1.0f);
  }
  if (!active) return;

  if constexpr (kReload) {
    held.template Load<RowRead::kLastUse>(seg, row_base, vectors, has_residual,
                                          RowReadPolicy<RowRead::kLastUse>());
  } else {
    if constexpr (kElements) {
      if (!vec) {
        StoreRowElements<T, kN, kResidual, kW>(seg, row_offset, elements, held, inv_rms,
                                               has_residual);
        return;
      }
    }
    if constexpr (!kResidual) held.KeepRaw();
  }
  if constexpr (kReload && !Build::kReloadHoldsWeights) {
    StoreRow(seg, norm, row_base, vectors, held, WeightsOnUse<T, kW>{}, inv_rms, has_residual);
  } else {
    HeldWeights<T, kN, kW> weights;
    weights.Load(norm, vectors);
    StoreRow(seg, norm, row_base, vectors, held, weights, inv_rms, has_residual);
  }
}

}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_ROWS_KERNEL_CUH_
