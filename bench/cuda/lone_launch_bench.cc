// normd_lone_launch_bench: what one small request costs on the device when it is the only one, the
// floor under normd's CUDA path at concurrency 1.
//
// normd's own account of a lone 1 x 4096 bf16 request on the H200 (/metrics) has a "kernel" stage
// of 17-24 µs between the CUDA events around the launch, at a 1,980 MHz SM clock, where the same
// kernel replayed from a CUDA graph takes 1.4 µs. This program times the same sequence outside
// normd, one launch at a time on one thread, so the two can be told apart: what the device and the
// driver cost, and what normd adds around them.
//
// Each case runs kIterations times after warm-up, optionally with an idle gap between launches
// (normd at concurrency 1 sees about 250 µs between requests: the gRPC round trip), spent one of
// three ways: spinning (the core stays busy and its caches keep the driver's code and data),
// sleeping (the core may idle, as a server thread waiting in epoll does), or sleeping and then
// touching 8 MiB of other memory (as gRPC's parsing of the next request does to the caches).
// Printed are the medians of the host's wall time from the first enqueue to the end of the wait and
// of the time between the events around the kernel (which includes any host delay between the two
// records: the device timestamps the first record as soon as it arrives when it is idle).
//   device     input and output in device memory: record, kernel, record, wait
//   zero_copy  input and output in mapped pinned host memory (normd's path for small launches)
//   copies     pinned host -> device copy, kernel, device -> host copy, events between each
//   bare       device memory, kernel then cudaStreamSynchronize, no events: the driver's floor
//
//   normd_lone_launch_bench [--gaps-us 0,250] [--hidden 4096] [--rows 1]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/cuda/bench_util.h"
#include "kernels/cuda/rmsnorm_cuda.h"
#include "kernels/dtype.h"
#include "kernels/rmsnorm.h"

namespace {

using normd::bench::Median;

using Clock = std::chrono::steady_clock;

constexpr int kWarmup = 200;
constexpr int kIterations = 2000;

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

enum class GapMode { kSpin, kSleep, kSleepAndEvict };

const char* GapName(GapMode m) {
  return m == GapMode::kSpin ? "spin" : m == GapMode::kSleep ? "sleep" : "sleep+evict";
}

std::vector<unsigned char>& OtherMemory() {
  static std::vector<unsigned char> memory(size_t{8} << 20, 1);
  return memory;
}

// The idle time between two launches (see the top of the file).
void IdleFor(double us, GapMode mode) {
  if (us <= 0) return;
  const auto until = Clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(us * 1e3));
  if (mode == GapMode::kSpin) {
    while (Clock::now() < until) {
    }
    return;
  }
  std::this_thread::sleep_until(until);
  if (mode == GapMode::kSleepAndEvict) {
    std::vector<unsigned char>& memory = OtherMemory();
    for (size_t i = 0; i < memory.size(); i += 64)
      memory[i] = static_cast<unsigned char>(memory[i] + 1);
  }
}

double UsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

struct Buffers {
  void* host_in = nullptr;   // pinned, mapped
  void* host_out = nullptr;  // pinned, mapped
  void* mapped_in = nullptr;
  void* mapped_out = nullptr;
  void* dev_in = nullptr;
  void* dev_out = nullptr;
  void* dev_weight = nullptr;
  size_t bytes = 0;
};

normd::RmsNormSegment Segment(const Buffers& b, int64_t rows, const void* in, void* out) {
  normd::RmsNormSegment s;
  s.input = in;
  s.output = out;
  s.weight = b.dev_weight;
  s.weight_dtype = normd::DType::kBFloat16;
  s.rows = rows;
  s.eps = 1e-6f;
  return s;
}

struct CaseResult {
  std::vector<double> wall_us, kernel_us, h2d_us, d2h_us;
};

CaseResult RunCase(const std::string& name, const Buffers& b, int64_t rows, int64_t hidden,
                   double gap_us, GapMode mode, cudaStream_t stream, cudaEvent_t ev[4]) {
  CaseResult r;
  const bool device = name == "device" || name == "bare";
  const normd::RmsNormSegment seg = name == "zero_copy"
                                        ? Segment(b, rows, b.mapped_in, b.mapped_out)
                                        : Segment(b, rows, b.dev_in, b.dev_out);
  for (int i = 0; i < kWarmup + kIterations; ++i) {
    IdleFor(gap_us, mode);
    const auto t0 = Clock::now();
    if (name == "bare") {
      CHECK_CUDA(normd::cuda::RmsNorm(normd::DType::kBFloat16, hidden, seg, stream));
      CHECK_CUDA(cudaStreamSynchronize(stream));
    } else if (device || name == "zero_copy") {
      CHECK_CUDA(cudaEventRecord(ev[1], stream));
      CHECK_CUDA(normd::cuda::RmsNorm(normd::DType::kBFloat16, hidden, seg, stream));
      CHECK_CUDA(cudaEventRecord(ev[2], stream));
      CHECK_CUDA(cudaEventSynchronize(ev[2]));
    } else {  // copies
      CHECK_CUDA(cudaEventRecord(ev[0], stream));
      CHECK_CUDA(cudaMemcpyAsync(b.dev_in, b.host_in, b.bytes, cudaMemcpyHostToDevice, stream));
      CHECK_CUDA(cudaEventRecord(ev[1], stream));
      CHECK_CUDA(normd::cuda::RmsNorm(normd::DType::kBFloat16, hidden, seg, stream));
      CHECK_CUDA(cudaEventRecord(ev[2], stream));
      CHECK_CUDA(cudaMemcpyAsync(b.host_out, b.dev_out, b.bytes, cudaMemcpyDeviceToHost, stream));
      CHECK_CUDA(cudaEventRecord(ev[3], stream));
      CHECK_CUDA(cudaEventSynchronize(ev[3]));
    }
    const double wall = UsSince(t0);
    if (i < kWarmup) continue;
    r.wall_us.push_back(wall);
    float ms = 0;
    if (name != "bare") {
      CHECK_CUDA(cudaEventElapsedTime(&ms, ev[1], ev[2]));
      r.kernel_us.push_back(ms * 1e3);
    }
    if (name == "copies") {
      CHECK_CUDA(cudaEventElapsedTime(&ms, ev[0], ev[1]));
      r.h2d_us.push_back(ms * 1e3);
      CHECK_CUDA(cudaEventElapsedTime(&ms, ev[2], ev[3]));
      r.d2h_us.push_back(ms * 1e3);
    }
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<double> gaps = {0, 250};
  int64_t hidden = 4096, rows = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : "";
    if (arg == "--gaps-us") {
      gaps = normd::bench::ParseNumberList(value);
      ++i;
    } else if (arg == "--hidden") {
      hidden = std::atoll(value);
      ++i;
    } else if (arg == "--rows") {
      rows = std::atoll(value);
      ++i;
    } else {
      std::fprintf(stderr, "usage: %s [--gaps-us 0,250] [--hidden 4096] [--rows 1]\n", argv[0]);
      return 2;
    }
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  Buffers b;
  b.bytes = static_cast<size_t>(rows * hidden) * 2;
  CHECK_CUDA(cudaHostAlloc(&b.host_in, b.bytes, cudaHostAllocMapped));
  CHECK_CUDA(cudaHostAlloc(&b.host_out, b.bytes, cudaHostAllocMapped));
  CHECK_CUDA(cudaHostGetDevicePointer(&b.mapped_in, b.host_in, 0));
  CHECK_CUDA(cudaHostGetDevicePointer(&b.mapped_out, b.host_out, 0));
  CHECK_CUDA(cudaMalloc(&b.dev_in, b.bytes));
  CHECK_CUDA(cudaMalloc(&b.dev_out, b.bytes));
  CHECK_CUDA(cudaMalloc(&b.dev_weight, static_cast<size_t>(hidden) * 2));
  std::vector<uint16_t> ones(static_cast<size_t>(std::max(rows * hidden, hidden)),
                             0x3F80);  // bf16 1.0
  std::memcpy(b.host_in, ones.data(), b.bytes);
  CHECK_CUDA(cudaMemcpy(b.dev_in, ones.data(), b.bytes, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(b.dev_weight, ones.data(), static_cast<size_t>(hidden) * 2,
                        cudaMemcpyHostToDevice));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t ev[4];
  for (cudaEvent_t& e : ev) CHECK_CUDA(cudaEventCreate(&e));

  std::printf(
      "# %lld x %lld bf16 plain, one launch at a time, %d launches per case after %d of warm-up\n",
      static_cast<long long>(rows), static_cast<long long>(hidden), kIterations, kWarmup);
  std::printf("%-10s %7s %-11s %9s %9s %9s %11s %8s %8s\n", "case", "gap_us", "gap", "wall_p50",
              "wall_p10", "wall_p90", "kernel_p50", "h2d_p50", "d2h_p50");
  for (const double gap : gaps) {
    for (const GapMode mode : {GapMode::kSpin, GapMode::kSleep, GapMode::kSleepAndEvict}) {
      if (gap == 0 && mode != GapMode::kSpin) continue;
      for (const std::string name : {"bare", "device", "zero_copy", "copies"}) {
        const CaseResult r = RunCase(name, b, rows, hidden, gap, mode, stream, ev);
        std::printf("%-10s %7.0f %-11s %9.2f %9.2f %9.2f %11.2f %8.2f %8.2f\n", name.c_str(), gap,
                    GapName(mode), Median(r.wall_us), Percentile(r.wall_us, 0.1),
                    Percentile(r.wall_us, 0.9), Median(r.kernel_us), Median(r.h2d_us),
                    Median(r.d2h_us));
        std::fflush(stdout);
      }
    }
  }
  // The output must be what RMSNorm of all-ones rows with unit weights gives: ones.
  std::vector<uint16_t> out(static_cast<size_t>(rows * hidden));
  CHECK_CUDA(cudaMemcpy(out.data(), b.dev_out, b.bytes, cudaMemcpyDeviceToHost));
  const bool device_ok =
      std::all_of(out.begin(), out.end(), [](uint16_t v) { return v == 0x3F80; });
  std::memcpy(out.data(), b.host_out, b.bytes);
  const bool host_ok = std::all_of(out.begin(), out.end(), [](uint16_t v) { return v == 0x3F80; });
  std::printf("# outputs checked (all ones): device %s, host %s\n", device_ok ? "ok" : "WRONG",
              host_ok ? "ok" : "WRONG");
  return device_ok && host_ok ? 0 : 1;
}
