// `normd_kernel_bench sweep`: times every candidate kernel configuration (CandidateConfigs) at
// the points of a shape grid, beside a device copy of the same bytes, checks every candidate's
// output against the fp64 reference, re-times a sample of points to measure the noise band, and
// writes every measurement and the choice table for this GPU's architecture
// (kernels/cuda/tables/sm_<N>.csv, the format kernel_table.h describes).
//
// The grid (the points in the order they are timed, until the time budget ends; docs/KERNELS.md):
//   tier 0  bf16 and fp32, plain and with a residual, weights of the input's dtype, H in a
//           geometric set from 128 to 65536, rows 1, 8, 64, 512, 2048, 8192, 32768, 131072
//   tier 1  the same at odd H (primes, H that is not whole 16-byte vectors: the element path)
//   tier 2  bf16 with fp32 weights (its own slice of the table), and fp16 (kept out of the table:
//           fp16 launches take bf16's points; the summary says how bf16's pick does at fp16's)
//   tier 3  every other multiple of 128 up to 16384 and of 1024 up to 65536, bf16 and fp32
// Each tier is shuffled (fixed seed), so a budget that ends inside a tier leaves its points
// sampled evenly. A tensor is capped at --max-tensor-mib (rows above the cap are skipped).
// Cluster configurations are timed up to 512 rows, and at any rows where a row passes 32 KB.
#ifndef NORMD_BENCH_CUDA_KERNEL_SWEEP_H_
#define NORMD_BENCH_CUDA_KERNEL_SWEEP_H_

#include <cstdint>
#include <string>
#include <vector>

namespace normd::bench {

struct SweepOptions {
  double budget_s = 240;          // the whole sweep, noise re-timing included
  double noise_fraction = 0.12;   // of the budget kept for re-timing points
  std::string measurements_csv;   // every (point, configuration) timed; empty: none
  std::string table_csv;          // the choice table; empty: none
  std::string command;            // the command line, recorded in the table's header
  int64_t max_tensor_mib = 1024;  // the largest tensor (x, r, y or residual_out) a point uses
  int max_tier = 3;               // the last tier of the grid to time
  int64_t hidden_min = 0;         // only points of at least this H
  int64_t rows_min = 0;           // only points of at least this many rows
  double min_gain = 0.01;         // the noise band's floor (see Chosen in kernel_sweep.cc)
  bool quick = false;             // a few points only, to try the program out
};

// Runs the sweep on the current device; 0 on success, 1 on a mismatch against the reference.
int RunSweep(const SweepOptions& options);

// `normd_kernel_bench table`: the table written again from the measurements of one or more sweep
// runs (a later file's time of a configuration at a point replaces an earlier one's), without a
// GPU: the same rule, band and header as the sweep's.
struct TableOptions {
  std::vector<std::string> measurements_csv;
  std::string table_csv;
  std::string command;
  double band = 0;  // 0: the band recorded in the last measurements file
};
int BuildTable(const TableOptions& options);

}  // namespace normd::bench

#endif  // NORMD_BENCH_CUDA_KERNEL_SWEEP_H_
