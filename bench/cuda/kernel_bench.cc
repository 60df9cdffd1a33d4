// normd_kernel_bench: the CUDA kernels' benchmark, in kernel time (CUDA graph replay: no host
// dispatch in the figures). Three modes:
//
//   normd_kernel_bench sweep [--budget-s 240] [--table FILE] [--measurements FILE] [--tier 3]
//       [--hidden-min H] [--rows-min ROWS] [--max-tensor-mib 1024] [--quick]
//     Every candidate configuration at the points of the shape grid, beside a copy of the same
//     bytes; writes the choice table for this GPU (kernel_sweep.h). The table in the tree came
//     from `normd_kernel_bench sweep --table kernels/cuda/tables/sm_90.csv` on an H200.
//
//   normd_kernel_bench batched [--dtypes bf16] [--hidden 1024,...] [--rows 1024,...]
//       [--segments 16,64]
//     The rows of one tensor normalized as one segment (RmsNorm) and as a segment table of S
//     equal segments (RmsNormBatched, with the table's host copy and without it, weights
//     alternating between two buffers), and 64 requests of 1-64 rows against one segment of
//     their total; the ratios to the single segment's time.
//
//   normd_kernel_bench [latency]
//     Rows 1 and 8 of bf16 H 4096 and 7168: 20 launches captured in one graph with programmatic
//     dependent launch, L2-resident data; per launch, median of 200 replays.
//
//   normd_kernel_bench table --measurements A.csv[,B.csv] --table FILE [--band 0.019]
//     The table written again from sweep measurements (kernel_sweep.h), without a GPU.
//
// batched and latency take --table-file FILE: that table instead of the one compiled in.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/cuda/bench_util.h"
#include "bench/cuda/device_timer.h"
#include "bench/cuda/kernel_sweep.h"
#include "kernels/cuda/kernel_table.h"
#include "kernels/cuda/rmsnorm_cuda.h"

namespace normd::bench {
namespace {

bool ParseDType(const std::string& s, DType* d) {
  if (s == "bf16")
    *d = DType::kBFloat16;
  else if (s == "fp16")
    *d = DType::kFloat16;
  else if (s == "fp32")
    *d = DType::kFloat32;
  else
    return false;
  return true;
}

std::vector<int64_t> Ints(const std::string& s) {
  std::vector<int64_t> v;
  for (const double d : ParseNumberList(s)) v.push_back(static_cast<int64_t>(d));
  return v;
}

std::vector<std::string> Words(const std::string& s) {
  std::vector<std::string> v;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t comma = s.find(',', at);
    const std::string w = s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (!w.empty()) v.push_back(w);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return v;
}

// Segment tables over the rows of one tensor (a rotation set each), on the device and the host.
struct Tables {
  std::vector<std::vector<RmsNormSegment>> host;  // per rotation set
  RmsNormSegment* device = nullptr;
  int segments = 0;
  ~Tables() { cudaFree(device); }
};

// `counts` rows per segment, laid end to end over `whole` (one tensor), weights alternating
// between `weight_a` and `weight_b`.
void BuildTables(const std::vector<RmsNormSegment>& whole_per_set,
                 const std::vector<int64_t>& counts, int64_t hidden, DType dtype,
                 const void* weight_a, const void* weight_b, Tables* tables) {
  const size_t item = ItemSize(dtype);
  tables->segments = static_cast<int>(counts.size());
  for (const RmsNormSegment& whole : whole_per_set) {
    std::vector<RmsNormSegment> table;
    int64_t first = 0;
    for (size_t k = 0; k < counts.size(); ++k) {
      const size_t at = static_cast<size_t>(first * hidden) * item;
      RmsNormSegment s = whole;
      s.input = static_cast<const unsigned char*>(whole.input) + at;
      s.output = static_cast<unsigned char*>(whole.output) + at;
      if (whole.residual != nullptr) {
        s.residual = static_cast<const unsigned char*>(whole.residual) + at;
        s.residual_out = static_cast<unsigned char*>(whole.residual_out) + at;
      }
      s.weight = k % 2 == 0 ? weight_a : weight_b;
      s.first_row = first;
      s.rows = counts[k];
      first += counts[k];
      table.push_back(s);
    }
    tables->host.push_back(table);
  }
  const size_t per_set = counts.size() * sizeof(RmsNormSegment);
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&tables->device), per_set * whole_per_set.size()));
  for (size_t i = 0; i < tables->host.size(); ++i) {
    CHECK_CUDA(cudaMemcpy(reinterpret_cast<unsigned char*>(tables->device) + i * per_set,
                          tables->host[i].data(), per_set, cudaMemcpyHostToDevice));
  }
}

int Batched(int argc, char** argv) {
  std::vector<DType> dtypes = {DType::kBFloat16};
  std::vector<int64_t> hiddens = {1024, 2048, 4096, 7168, 8192, 16384};
  std::vector<int64_t> row_counts = {1024, 2048, 8192, 32768, 131072};
  std::vector<int64_t> segment_counts = {16, 64};
  int64_t max_tensor_mib = 1024;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--dtypes") {
      dtypes.clear();
      for (const std::string& w : Words(value)) {
        DType d;
        if (!ParseDType(w, &d)) return 2;
        dtypes.push_back(d);
      }
    } else if (flag == "--hidden") {
      hiddens = Ints(value);
    } else if (flag == "--rows") {
      row_counts = Ints(value);
    } else if (flag == "--segments") {
      segment_counts = Ints(value);
    } else if (flag == "--max-tensor-mib") {
      max_tensor_mib = std::stoll(value);
    } else if (flag == "--table-file") {
      // taken by TakeTableFile
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  const size_t pool_bytes = static_cast<size_t>(max_tensor_mib) << 20;
  DevicePool x(pool_bytes, 1), r(pool_bytes, 2), y(pool_bytes, 3), ro(pool_bytes, 4);
  const DeviceWeights weights_a;
  void* weight_b16 = nullptr;
  void* weight_b32 = nullptr;  // the same values at other addresses: "mixed" weights
  CHECK_CUDA(cudaMalloc(&weight_b16, 65536 * 2));
  CHECK_CUDA(cudaMalloc(&weight_b32, 65536 * 4));
  CHECK_CUDA(cudaMemcpy(weight_b16, weights_a.sixteen_bit, 65536 * 2, cudaMemcpyDeviceToDevice));
  CHECK_CUDA(cudaMemcpy(weight_b32, weights_a.fp32, 65536 * 4, cudaMemcpyDeviceToDevice));
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::printf("%-5s %-5s %7s %6s %9s %-22s %9s %7s\n", "dtype", "mode", "rows", "H", "single_us",
              "table", "table_us", "ratio");
  std::mt19937_64 rng(64);
  int64_t mismatches = 0;
  for (const DType dtype : dtypes) {
    for (const bool residual : {false, true}) {
      for (const int64_t hidden : hiddens) {
        for (const int64_t listed_rows : row_counts) {
          // The last case of each H: 64 requests of 1-64 rows.
          const int64_t tensor = listed_rows * hidden * static_cast<int64_t>(ItemSize(dtype));
          if (tensor > static_cast<int64_t>(pool_bytes)) continue;
          const int64_t stride = (tensor + 255) / 256 * 256;
          const int sets = RotationSets(
              tensor * (residual ? 4 : 2),
              static_cast<int>(std::min<int64_t>(1024, static_cast<int64_t>(pool_bytes) / stride)));
          const void* wa = weights_a.For(dtype);
          const void* wb = dtype == DType::kFloat32 ? weight_b32 : weight_b16;
          auto whole = [&](int64_t rows) {
            std::vector<RmsNormSegment> per_set;
            for (int s = 0; s < sets; ++s) {
              RmsNormSegment seg;
              seg.input = x.data() + s * stride;
              seg.output = y.data() + s * stride;
              if (residual) {
                seg.residual = r.data() + s * stride;
                seg.residual_out = ro.data() + s * stride;
              }
              seg.weight = wa;
              seg.weight_dtype = dtype;
              seg.rows = rows;
              per_set.push_back(seg);
            }
            return per_set;
          };
          const int calls =
              CallsFor(static_cast<double>(tensor * (residual ? 4 : 2)) / 3.5e6 + 2.0, sets);
          auto time_single = [&](const std::vector<RmsNormSegment>& segs) {
            return GraphTimeUs(
                [&](int set, cudaStream_t s) {
                  return cuda::RmsNorm(dtype, hidden, segs[set % sets], s);
                },
                calls, 5, stream);
          };
          auto time_table = [&](const Tables& t, bool host_copy, int64_t rows) {
            return GraphTimeUs(
                [&](int set, cudaStream_t s) {
                  RmsNormLaunch launch;
                  launch.dtype = dtype;
                  launch.hidden = hidden;
                  launch.total_rows = rows;
                  launch.segments = t.device + static_cast<size_t>(set % sets) * t.segments;
                  launch.num_segments = t.segments;
                  return host_copy ? cuda::RmsNormBatched(launch, t.host[set % sets].data(), s)
                                   : cuda::RmsNormBatched(launch, s);
                },
                calls, 5, stream);
          };
          auto report = [&](int64_t rows, const std::string& what, double single, double us) {
            std::printf("%-5s %-5s %7lld %6lld %9.2f %-22s %9.2f %7.3f\n",
                        dtype == DType::kFloat32   ? "fp32"
                        : dtype == DType::kFloat16 ? "fp16"
                                                   : "bf16",
                        residual ? "fused" : "plain", static_cast<long long>(rows),
                        static_cast<long long>(hidden), single, what.c_str(), us, us / single);
          };
          const std::vector<RmsNormSegment> one = whole(listed_rows);
          const double single = time_single(one);
          for (const int64_t segments : segment_counts) {
            std::vector<int64_t> counts(static_cast<size_t>(segments), listed_rows / segments);
            counts.back() += listed_rows % segments;
            Tables tables;
            BuildTables(one, counts, hidden, dtype, wa, wb, &tables);
            for (const bool host_copy : {true, false}) {
              const double us = time_table(tables, host_copy, listed_rows);
              mismatches += CheckRowsOnDevice(dtype, hidden, one[0], "batched");
              report(listed_rows,
                     std::to_string(segments) + " segments" + (host_copy ? "" : ", no host copy"),
                     single, us);
            }
          }
          if (listed_rows == row_counts.back()) {
            std::vector<int64_t> counts(64);
            int64_t total = 0;
            for (int64_t& c : counts) total += (c = 1 + static_cast<int64_t>(rng() % 64));
            const std::vector<RmsNormSegment> same = whole(total);
            Tables tables;
            BuildTables(same, counts, hidden, dtype, wa, wb, &tables);
            const double lone = time_single(same);
            report(total, "64 requests 1-64 rows", lone, time_table(tables, true, total));
          }
        }
      }
    }
  }
  cudaFree(weight_b16);
  cudaFree(weight_b32);
  cudaStreamDestroy(stream);
  std::printf("# %lld mismatches against the reference\n", static_cast<long long>(mismatches));
  return mismatches == 0 ? 0 : 1;
}

int Latency() {
  DevicePool x(64 << 20, 1), r(64 << 20, 2);
  const DeviceWeights weights;
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cuda::RmsNormOptions options;
  options.programmatic_dependent_launch = true;
  options.weight_before_dependency_wait = true;
  std::printf("%-5s %-5s %5s %6s %10s\n", "dtype", "mode", "rows", "H", "launch_us");
  for (const bool residual : {false, true}) {
    for (const int64_t hidden : {4096, 7168}) {
      for (const int64_t rows : {1, 8}) {
        RmsNormSegment seg;  // in place, chained: each launch reads what the last wrote
        seg.input = x.data();
        seg.output = x.data();
        if (residual) {
          seg.residual = r.data();
          seg.residual_out = r.data();
        }
        seg.weight = weights.For(DType::kBFloat16);
        seg.weight_dtype = DType::kBFloat16;
        seg.rows = rows;
        const double us = GraphTimeUs(
            [&](int, cudaStream_t s) {
              return cuda::RmsNorm(DType::kBFloat16, hidden, seg, s, options);
            },
            20, 200, stream);
        std::printf("%-5s %-5s %5lld %6lld %10.3f\n", "bf16", residual ? "fused" : "plain",
                    static_cast<long long>(rows), static_cast<long long>(hidden), us);
      }
    }
  }
  cudaStreamDestroy(stream);
  return 0;
}

int Sweep(int argc, char** argv) {
  SweepOptions options;
  options.command = "normd_kernel_bench";
  for (int i = 1; i < argc; ++i) options.command += std::string(" ") + argv[i];
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--quick") {
      options.quick = true;
      continue;
    }
    if (i + 1 >= argc) return 2;
    const std::string value = argv[++i];
    if (flag == "--budget-s") {
      options.budget_s = std::stod(value);
    } else if (flag == "--table") {
      options.table_csv = value;
    } else if (flag == "--measurements") {
      options.measurements_csv = value;
    } else if (flag == "--tier") {
      options.max_tier = std::stoi(value);
    } else if (flag == "--max-tensor-mib") {
      options.max_tensor_mib = std::stoll(value);
    } else if (flag == "--hidden-min") {
      options.hidden_min = std::stoll(value);
    } else if (flag == "--rows-min") {
      options.rows_min = std::stoll(value);
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  return RunSweep(options);
}

int Table(int argc, char** argv) {
  TableOptions options;
  options.command = "normd_kernel_bench";
  for (int i = 1; i < argc; ++i) options.command += std::string(" ") + argv[i];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--measurements") {
      options.measurements_csv = Words(value);
    } else if (flag == "--table") {
      options.table_csv = value;
    } else if (flag == "--band") {
      options.band = std::stod(value);
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (options.measurements_csv.empty() || options.table_csv.empty()) return 2;
  return BuildTable(options);
}

// --table-file FILE (batched, latency): the choice table FILE for this GPU instead of the one
// compiled in (a table just swept, before it is built into the library).
bool TakeTableFile(int argc, char** argv) {
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::string(argv[i]) != "--table-file") continue;
    FILE* f = std::fopen(argv[i + 1], "r");
    if (f == nullptr) {
      std::perror(argv[i + 1]);
      return false;
    }
    std::string text;
    char buffer[4096];
    size_t n = 0;
    while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) text.append(buffer, n);
    std::fclose(f);
    std::string error;
    int device = 0, major = 0, minor = 0;
    CHECK_CUDA(cudaGetDevice(&device));
    CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    CHECK_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    if (!cuda::internal::OverrideTableForBenchmarks(major * 10 + minor, text, &error)) {
      std::fprintf(stderr, "%s: %s\n", argv[i + 1], error.c_str());
      return false;
    }
    std::printf("# choice table from %s\n", argv[i + 1]);
  }
  return true;
}

}  // namespace
}  // namespace normd::bench

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "sweep") return normd::bench::Sweep(argc, argv);
  if (mode == "table") return normd::bench::Table(argc, argv);
  if ((mode == "batched" || mode == "latency") && !normd::bench::TakeTableFile(argc, argv))
    return 1;
  if (mode == "batched") return normd::bench::Batched(argc, argv);
  if (mode == "latency" || mode.empty()) return normd::bench::Latency();
  std::fprintf(
      stderr,
      "usage: normd_kernel_bench sweep|table|batched|latency [flags] (see the source's first "
      "comment)\n");
  return 2;
}
