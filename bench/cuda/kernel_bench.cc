// normd_kernel_bench: times the CUDA RMSNorm kernels (normd::cuda_kernels) on the device.
//
// Method (docs/PERFORMANCE.md, the CUDA kernels): CUDA events; for rows > 128 every sample
// launches once over each of S buffer sets (S chosen so one sample touches >= 240 MB, 4x the H200's
// 60 MB L2, so the data come from HBM) and the per-launch time is the sample over S; the figure is
// the median of >= 100 samples after warm-up. For rows <= 128, 20 launches are captured in one CUDA
// graph on one (L2-resident) buffer set and replayed; the figure is the median replay over 20. Both
// ways are timed with programmatic dependent launch (column us) and without (us_no_pdl). Bytes:
// 2*rows*H*size + H*wsize plain, 4*rows*H*size + H*wsize fused add. A device-to-device copy (1 GiB,
// bytes read + written) is timed in the same run.
//
//   normd_kernel_bench [--dtypes bf16,fp16,fp32] [--rows 1,8,...] [--hidden 1024,...]
//                      [--modes plain,fused] [--csv] [--sweep] [--staging auto,off,on]
//                      [--stages 0,2,4] [--two-pass] [--lean auto,off,on] [--cluster 0,1,2,4,8]
//                      [--shared-weights on,off] [--reload auto,off,on] [--vectors 0,1,2,4]
//                      [--threads 0,256,512] [--split 0,1,2,4,8] [--push auto,off,on]
//                      [--warp-row auto,off,on] [--rows-per-block 0,1,2,4,8]
// --staging times each shape once per listed choice of RmsNormOptions::staging, side by side (an
// A/B of the staged and the register kernels in one run); --stages likewise for the staged
// kernel's stage count (0 = as many as fit), --lean for RmsNormOptions::lean_two_pass (on: the lean
// two-pass kernel forced), --cluster for RmsNormOptions::cluster_ctas (0 automatic, 1 never),
// --shared-weights for RmsNormOptions::weights_through_shared, --reload for
// RmsNormOptions::reload (on: the reload kernel forced, staging off), --vectors for
// RmsNormOptions::vectors_per_thread, --threads for threads_per_row and --split for split_ctas
// (0 automatic, 1 never), --push for RmsNormOptions::split_push (on: the push kernel forced, with
// --split as its C and --threads as its G where given), --warp-row for RmsNormOptions::warp_row
// (on: the warp-row kernel forced, staging off), --rows-per-block for rows_per_block; --two-pass
// adds a run of the two-pass kernel. Every combination of the lists runs. The kernel column says
// which kernel ran: GxN for the register kernel, "reload GxN" for the reload kernel, "warp-row
// 32xN bB" for the warp-row kernel's B rows per block,
// "staged GxN Rr Ss" for the staged one, "cluster CxG" for C CTAs of G threads per row, "split
// CxGxN" for the split-row kernel's C CTAs of G threads of N vectors per row, "push CxGxN" for the
// push kernel's (N vectors of the CTA's share; "per warp" where each warp pushes its sum).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "bench/cuda/bench_util.h"
#include "kernels/cuda/rmsnorm_cuda.h"
#include "kernels/dtype.h"
#include "kernels/rmsnorm.h"

namespace {

using normd::bench::Median;

using normd::DType;

constexpr double kTouchBytes = 240e6;  // per timing sample: 4x the 60 MB L2
constexpr int kSamples = 100;
constexpr int kGraphLaunches = 20;
constexpr size_t kMaxTensorBytes = size_t{4} << 30;  // issue 3: drop shapes over 4 GiB

std::vector<int64_t> ParseInts(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stoll(item));
  return out;
}

using Options = normd::cuda::RmsNormOptions;

// Replaces `variants` with every one of them combined with every value of `values`, set by `set`
// (the first list multiplied in varies slowest).
template <typename V, typename Set>
void Multiply(std::vector<Options>& variants, const std::vector<V>& values, Set set) {
  std::vector<Options> combined;
  for (const Options& o : variants) {
    for (const V& v : values) {
      Options c = o;
      set(c, v);
      combined.push_back(c);
    }
  }
  variants.swap(combined);
}

std::vector<std::string> ParseStrings(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

DType ParseDType(const std::string& s) {
  if (s == "fp32" || s == "float32") return DType::kFloat32;
  if (s == "fp16" || s == "float16") return DType::kFloat16;
  return DType::kBFloat16;
}

const char* ShortName(DType d) {
  return d == DType::kFloat32 ? "fp32" : d == DType::kFloat16 ? "fp16" : "bf16";
}

// One device pool, filled once with random finite values of every dtype's range, carved per shape.
struct Pool {
  unsigned char* base = nullptr;
  size_t bytes = 0;
};

Pool MakePool(size_t bytes) {
  Pool pool;
  pool.bytes = bytes;
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&pool.base), bytes));
  // Random data valid in every dtype: each 32-bit word is an fp32 in [-2, 2) whose upper half is
  // therefore a bf16 in that range, and whose lower half is an fp16 in [-1, 1). (Read as fp16, the
  // upper half is some finite fp16 too: its exponent bits come from an fp32 exponent near 127.)
  const size_t pattern_bytes = size_t{64} << 20;
  std::vector<uint32_t> pattern(pattern_bytes / 4);
  uint64_t state = 0x1234567;
  for (auto& v : pattern) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const float f = static_cast<float>(static_cast<int64_t>(state >> 40) - (1 << 23)) * 0x1p-22f;
    // fp32 view: f with its low 16 bits replaced by a finite half/bf16 value of magnitude < 2.
    const uint32_t hi = normd::FloatBits(f) & 0xFFFF0000u;
    const uint16_t lo =
        normd::FloatToFloat16(static_cast<float>((state >> 20) & 0xFFF) / 2048.0f - 1.0f);
    v = hi | lo;
  }
  unsigned char* d = pool.base;
  CHECK_CUDA(cudaMemcpy(d, pattern.data(), std::min(pattern_bytes, bytes), cudaMemcpyHostToDevice));
  size_t filled = std::min(pattern_bytes, bytes);
  while (filled < bytes) {
    const size_t n = std::min(filled, bytes - filled);
    CHECK_CUDA(cudaMemcpy(d + filled, d, n, cudaMemcpyDeviceToDevice));
    filled += n;
  }
  return pool;
}

double DeviceCopyTBs(const Pool& pool) {
  const size_t bytes = size_t{1} << 30;
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  std::vector<double> t;
  for (int i = 0; i < 25; ++i) {
    CHECK_CUDA(cudaEventRecord(a));
    CHECK_CUDA(cudaMemcpyAsync(pool.base + bytes, pool.base, bytes, cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaEventRecord(b));
    CHECK_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    if (i >= 5) t.push_back(ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return 2.0 * bytes / (Median(t) * 1e-3) / 1e12;
}

struct Result {
  double us = 0;        // with programmatic dependent launch
  double us_nopdl = 0;  // the same launches without it
  int sets = 0;
  bool ok = true;
};

// Times one shape. Returns us per launch (median).
Result TimeShape(const Pool& pool, DType dtype, int64_t rows, int64_t hidden, bool fused,
                 const normd::cuda::RmsNormOptions& base_options) {
  Result res;
  const size_t item = normd::ItemSize(dtype);
  const size_t tensor = (static_cast<size_t>(rows * hidden) * item + 255) / 256 * 256;
  const int tensors = fused ? 4 : 2;
  const double touch = static_cast<double>(tensor) * tensors;
  const bool graph = rows <= 128;
  int sets = graph ? 1 : static_cast<int>(std::max(1.0, std::ceil(kTouchBytes / touch)));
  const size_t weight_bytes = (static_cast<size_t>(hidden) * 4 + 255) / 256 * 256;
  while (sets > 1 && static_cast<size_t>(sets) * tensors * tensor + weight_bytes > pool.bytes)
    --sets;
  if (static_cast<size_t>(sets) * tensors * tensor + weight_bytes > pool.bytes) {
    res.ok = false;
    return res;
  }
  res.sets = sets;
  std::vector<normd::RmsNormSegment> segs(sets);
  unsigned char* p = pool.base;
  const void* weight = p;
  p += weight_bytes;
  for (int s = 0; s < sets; ++s) {
    auto& g = segs[s];
    g.input = p;
    p += tensor;
    g.output = p;
    p += tensor;
    if (fused) {
      g.residual = p;
      p += tensor;
      g.residual_out = p;
      p += tensor;
    }
    g.weight = weight;
    g.weight_dtype = dtype;
    g.rows = rows;
    g.eps = 1e-6f;
  }
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  auto time_region = [&](auto&& body, int samples, int warmup) {
    std::vector<double> t;
    for (int i = 0; i < warmup + samples; ++i) {
      CHECK_CUDA(cudaEventRecord(a, stream));
      body();
      CHECK_CUDA(cudaEventRecord(b, stream));
      CHECK_CUDA(cudaEventSynchronize(b));
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
      if (i >= warmup) t.push_back(ms * 1e3);
    }
    return Median(t);
  };
  // Each way is timed with programmatic dependent launch and without (the weight read before the
  // wait with it: the launches never write it).
  for (const bool pdl : {true, false}) {
    normd::cuda::RmsNormOptions o = base_options;
    o.programmatic_dependent_launch = pdl;
    o.weight_before_dependency_wait = pdl;
    auto launch = [&](const normd::RmsNormSegment& seg) {
      const cudaError_t e = normd::cuda::RmsNorm(dtype, hidden, seg, stream, o);
      if (e != cudaSuccess) {
        std::fprintf(stderr, "launch: %s\n", cudaGetErrorString(e));
        std::exit(1);
      }
    };
    double& us = pdl ? res.us : res.us_nopdl;
    if (graph) {
      cudaGraph_t g;
      CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      for (int i = 0; i < kGraphLaunches; ++i) launch(segs[0]);
      CHECK_CUDA(cudaStreamEndCapture(stream, &g));
      cudaGraphExec_t exec;
      CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
      us =
          time_region([&] { CHECK_CUDA(cudaGraphLaunch(exec, stream)); }, 200, 10) / kGraphLaunches;
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(g);
    } else {
      // Back-to-back launches over the rotated sets: with PDL each launch's blocks are scheduled
      // while the previous launch drains, and wait for it before reading.
      us = time_region(
               [&] {
                 for (int s = 0; s < sets; ++s) launch(segs[s]);
               },
               kSamples, 3) /
           sets;
    }
  }
  CHECK_CUDA(cudaGetLastError());
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaStreamDestroy(stream);
  return res;
}

double Bytes(DType dtype, int64_t rows, int64_t hidden, bool fused) {
  const double item = static_cast<double>(normd::ItemSize(dtype));
  return (fused ? 4.0 : 2.0) * static_cast<double>(rows) * hidden * item + hidden * item;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> dtypes = {"bf16", "fp16", "fp32"};
  std::vector<int64_t> rows_list = {1, 8, 128, 1024, 4096, 16384, 65536};
  std::vector<int64_t> hidden_list = {1024, 3000, 4096, 5120, 7168, 8192, 16384};
  std::vector<std::string> modes = {"plain", "fused"};
  bool csv = false;
  bool sweep = false;
  std::vector<std::string> stagings = {"auto"};
  std::vector<int64_t> stage_counts = {0};
  bool two_pass = false;
  std::vector<std::string> leans = {"auto"};
  std::vector<int64_t> clusters = {0};               // RmsNormOptions::cluster_ctas
  std::vector<std::string> shared_weights = {"on"};  // RmsNormOptions::weights_through_shared
  std::vector<std::string> reloads = {"auto"};       // RmsNormOptions::reload
  std::vector<int64_t> vector_counts = {0};          // RmsNormOptions::vectors_per_thread
  std::vector<int64_t> thread_counts = {0};          // RmsNormOptions::threads_per_row
  std::vector<int64_t> split_counts = {0};           // RmsNormOptions::split_ctas
  std::vector<std::string> pushes = {"auto"};        // RmsNormOptions::split_push
  std::vector<std::string> warp_rows = {"auto"};     // RmsNormOptions::warp_row
  std::vector<int64_t> rows_per_block_counts = {0};  // RmsNormOptions::rows_per_block
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--dtypes")
      dtypes = ParseStrings(next());
    else if (arg == "--rows")
      rows_list = ParseInts(next());
    else if (arg == "--hidden")
      hidden_list = ParseInts(next());
    else if (arg == "--modes")
      modes = ParseStrings(next());
    else if (arg == "--csv")
      csv = true;
    else if (arg == "--sweep")
      sweep = true;
    else if (arg == "--staging")
      stagings = ParseStrings(next());
    else if (arg == "--stages")
      stage_counts = ParseInts(next());
    else if (arg == "--two-pass")
      two_pass = true;
    else if (arg == "--lean")
      leans = ParseStrings(next());
    else if (arg == "--cluster")
      clusters = ParseInts(next());
    else if (arg == "--shared-weights")
      shared_weights = ParseStrings(next());
    else if (arg == "--reload")
      reloads = ParseStrings(next());
    else if (arg == "--vectors")
      vector_counts = ParseInts(next());
    else if (arg == "--threads")
      thread_counts = ParseInts(next());
    else if (arg == "--split")
      split_counts = ParseInts(next());
    else if (arg == "--push")
      pushes = ParseStrings(next());
    else if (arg == "--warp-row")
      warp_rows = ParseStrings(next());
    else if (arg == "--rows-per-block")
      rows_per_block_counts = ParseInts(next());
    else {
      std::fprintf(stderr,
                   "usage: %s [--dtypes bf16,fp16,fp32] [--rows ...] [--hidden ...] "
                   "[--modes plain,fused] [--csv] [--sweep] [--staging auto,off,on] "
                   "[--stages 0,2,...] [--two-pass] [--lean auto,off,on] [--cluster 0,1,2,4,8] "
                   "[--shared-weights on,off] [--reload auto,off,on] [--vectors 0,1,2,4] "
                   "[--threads 0,256,512] [--split 0,1,2,4,8] [--push auto,off,on] "
                   "[--warp-row auto,off,on] [--rows-per-block 0,1,2,4,8]\n",
                   argv[0]);
      return 2;
    }
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  size_t free_bytes = 0, total = 0;
  CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total));
  const size_t pool_bytes = std::min(free_bytes - (size_t{4} << 30), size_t{20} << 30);
  const Pool pool = MakePool(pool_bytes);
  const double copy_tbs = DeviceCopyTBs(pool);
  std::printf(
      "# device %s, %d SMs, L2 %d MB; device-to-device copy %.3f TB/s (1 GiB, read+write)\n",
      prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20, copy_tbs);
  if (csv)
    std::printf(
        "dtype,mode,rows,hidden,us,tbs,pct_copy,us_no_pdl,threads_per_row,vectors_per_thread,"
        "sets,kernel\n");
  else
    std::printf("%-5s %-6s %6s %6s %10s %7s %7s %10s %s\n", "dtype", "mode", "rows", "H", "us",
                "TB/s", "%copy", "us_no_pdl", "kernel");
  for (const std::string& dname : dtypes) {
    const DType dtype = ParseDType(dname);
    for (const std::string& mode : modes) {
      const bool fused = mode == "fused";
      for (const int64_t rows : rows_list) {
        for (const int64_t hidden : hidden_list) {
          if (static_cast<size_t>(rows * hidden) * normd::ItemSize(dtype) > kMaxTensorBytes)
            continue;
          std::vector<Options> variants = {Options{}};
          using Staging = Options::Staging;
          Multiply(variants, stagings, [](Options& o, const std::string& v) {
            o.staging = v == "on" ? Staging::kOn : v == "off" ? Staging::kOff : Staging::kAuto;
          });
          Multiply(variants, stage_counts,
                   [](Options& o, int64_t v) { o.staged_stages = static_cast<int>(v); });
          using Lean = Options::LeanTwoPass;
          Multiply(variants, leans, [](Options& o, const std::string& v) {
            o.lean_two_pass = v == "on" ? Lean::kOn : v == "off" ? Lean::kOff : Lean::kAuto;
          });
          Multiply(variants, clusters,
                   [](Options& o, int64_t v) { o.cluster_ctas = static_cast<int>(v); });
          Multiply(variants, shared_weights,
                   [](Options& o, const std::string& v) { o.weights_through_shared = v != "off"; });
          using Reload = Options::Reload;
          Multiply(variants, reloads, [](Options& o, const std::string& v) {
            o.reload = v == "on" ? Reload::kOn : v == "off" ? Reload::kOff : Reload::kAuto;
          });
          Multiply(variants, vector_counts,
                   [](Options& o, int64_t v) { o.vectors_per_thread = static_cast<int>(v); });
          Multiply(variants, thread_counts,
                   [](Options& o, int64_t v) { o.threads_per_row = static_cast<int>(v); });
          Multiply(variants, split_counts,
                   [](Options& o, int64_t v) { o.split_ctas = static_cast<int>(v); });
          using Push = Options::SplitPush;
          Multiply(variants, pushes, [](Options& o, const std::string& v) {
            o.split_push = v == "on" ? Push::kOn : v == "off" ? Push::kOff : Push::kAuto;
          });
          using WarpRow = Options::WarpRow;
          Multiply(variants, warp_rows, [](Options& o, const std::string& v) {
            o.warp_row = v == "on" ? WarpRow::kOn : v == "off" ? WarpRow::kOff : WarpRow::kAuto;
          });
          Multiply(variants, rows_per_block_counts,
                   [](Options& o, int64_t v) { o.rows_per_block = static_cast<int>(v); });
          // Forcing the lean, the reload or the warp-row kernel: not the staged one either.
          for (Options& o : variants) {
            if (o.lean_two_pass == Lean::kOn || o.reload == Reload::kOn ||
                o.warp_row == WarpRow::kOn) {
              o.staging = Staging::kOff;
            }
          }
          if (two_pass) {
            normd::cuda::RmsNormOptions o;
            o.two_pass = true;
            o.staging = normd::cuda::RmsNormOptions::Staging::kOff;
            o.lean_two_pass = normd::cuda::RmsNormOptions::LeanTwoPass::kOff;
            variants.push_back(o);
          }
          if (sweep) {
            for (const int n : {1, 2, 4, 8}) {
              normd::cuda::RmsNormOptions o;
              o.vectors_per_thread = n;
              if (normd::cuda::ChooseKernelShape(dtype, hidden, rows, fused, o).threads_per_row !=
                  0)
                variants.push_back(o);
            }
          }
          for (const auto& o : variants) {
            const normd::cuda::KernelShape shape =
                normd::cuda::ChooseKernelShape(dtype, hidden, rows, fused, o);
            if (shape.threads_per_row == 0) continue;  // an override that cannot hold the row
            // The bench's buffers are 256-byte aligned, so a staged shape means the staged kernel.
            const normd::cuda::StagedShape staged =
                normd::cuda::ChooseStagedShape(dtype, hidden, rows, fused, o);
            const Result r = TimeShape(pool, dtype, rows, hidden, fused, o);
            if (!r.ok) continue;
            const double tbs = Bytes(dtype, rows, hidden, fused) / (r.us * 1e-6) / 1e12;
            const std::string tag = (sweep && o.vectors_per_thread != 0) ? "*" : "";
            char kernel[64];
            if (shape.split_push) {
              std::snprintf(kernel, sizeof kernel, "push %dx%dx%d%s", shape.split_ctas,
                            shape.threads_per_block, shape.vectors_per_thread,
                            shape.push_per_warp ? " per warp" : "");
            } else if (staged.rows_per_tile != 0) {
              std::snprintf(kernel, sizeof kernel, "staged %dx%d R%d S%d", staged.threads_per_row,
                            staged.vectors_per_thread, staged.rows_per_tile, staged.stages);
            } else if (shape.split_ctas > 1) {
              std::snprintf(kernel, sizeof kernel, "split %dx%dx%d", shape.split_ctas,
                            shape.threads_per_block, shape.vectors_per_thread);
            } else if (shape.cluster_ctas > 1) {
              std::snprintf(kernel, sizeof kernel, "cluster %dx%d", shape.cluster_ctas,
                            shape.threads_per_block);
            } else if (shape.two_pass) {
              std::snprintf(kernel, sizeof kernel, "%s %d",
                            shape.lean ? "lean two-pass" : "two-pass", shape.threads_per_row);
            } else if (shape.warp_row) {
              std::snprintf(kernel, sizeof kernel, "warp-row 32x%d b%d", shape.vectors_per_thread,
                            shape.rows_per_block);
            } else if (shape.reload) {
              std::snprintf(kernel, sizeof kernel, "reload %dx%d", shape.threads_per_row,
                            shape.vectors_per_thread);
            } else {
              std::snprintf(kernel, sizeof kernel, "%dx%d%s%s", shape.threads_per_row,
                            shape.vectors_per_thread, tag.c_str(),
                            o.weights_through_shared ? "" : " no-shared-w");
            }
            if (csv) {
              std::printf("%s,%s%s,%lld,%lld,%.3f,%.3f,%.1f,%.3f,%d,%d,%d,%s\n", ShortName(dtype),
                          mode.c_str(), tag.c_str(), static_cast<long long>(rows),
                          static_cast<long long>(hidden), r.us, tbs, 100.0 * tbs / copy_tbs,
                          r.us_nopdl, shape.threads_per_row, shape.vectors_per_thread, r.sets,
                          kernel);
            } else {
              std::printf("%-5s %-6s %6lld %6lld %10.3f %7.3f %6.1f%% %10.3f %s\n",
                          ShortName(dtype), mode.c_str(), static_cast<long long>(rows),
                          static_cast<long long>(hidden), r.us, tbs, 100.0 * tbs / copy_tbs,
                          r.us_nopdl, kernel);
            }
            std::fflush(stdout);
          }
        }
      }
    }
  }
  CHECK_CUDA(cudaFree(pool.base));
  return 0;
}
