// The measured choice tables: one CSV per GPU architecture (kernels/cuda/tables/sm_<N>.csv),
// compiled into the library, and the rule between their points. Internal to the CUDA library.
// Plain C++.
//
// Format: '#' lines are comments (the command and machine that measured it); the first other line
// names the columns, at least
//   dtype     bf16 | fp16 | fp32
//   residual  0 | 1
//   weights   input | fp32      (fp32: fp32 weights under a 16-bit input)
//   path      vector | element  (whether a row is whole 16-byte vectors)
//   hidden, rows                the point
//   config    Describe()'s notation, e.g. "reload n=2 b=256"
// Other columns (the times behind the choice) are for the reader.
//
// The rule between points: a launch takes the configuration of the nearest point of its slice
// (same dtype, residual, weights, path; fp16 falls back to bf16's points, fp32 weights to the
// input's, where the table has none) that can run it, the distance being |log2(H / H_point)| +
// |log2(rows / rows_point)|; ties go to the larger point.
#ifndef NORMD_KERNELS_CUDA_KERNEL_TABLE_H_
#define NORMD_KERNELS_CUDA_KERNEL_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/kernel_config.h"

namespace normd::cuda::internal {

struct TableEntry {
  DType dtype = DType::kBFloat16;
  bool residual = false;
  bool fp32_weights = false;
  bool vector = true;
  int64_t hidden = 0;
  int64_t rows = 0;
  KernelConfig config;
};

class NORMD_CUDA_API KernelTable {
 public:
  // Parses `csv`; false with *error naming the line where it does not parse.
  static bool Parse(const std::string& csv, KernelTable* table, std::string* error);

  // The configuration for `traits` by the rule above; false where no point of the slice can run
  // the launch.
  bool Lookup(const LaunchTraits& traits, const DeviceFeatures& device, KernelConfig* out) const;

  const std::vector<TableEntry>& entries() const { return entries_; }

 private:
  std::vector<TableEntry> entries_;
};

// The table for compute capability `sm` (a table serves its major version): the one compiled in,
// or the override below; null where there is none.
NORMD_CUDA_API const KernelTable* BuiltInTable(int sm);

// For benchmarks and tests on a GPU machine (a freshly swept table, before it is compiled in):
// from now on this process takes `csv` as the table for `sm`'s major version. Call it before any
// launch; false (with *error) where the text does not parse.
NORMD_CUDA_API bool OverrideTableForBenchmarks(int sm, const std::string& csv, std::string* error);

// Changes with every override, so that choices remembered from the previous table are dropped.
NORMD_CUDA_API int TableGeneration();

}  // namespace normd::cuda::internal

// OverrideTableForBenchmarks for ctypes (bench/cuda/compare_kernels.py): 0 on success.
extern "C" NORMD_CUDA_API int normd_cuda_override_table(int sm, const char* csv);

namespace normd::cuda::internal {}  // namespace normd::cuda::internal

#endif  // NORMD_KERNELS_CUDA_KERNEL_TABLE_H_
