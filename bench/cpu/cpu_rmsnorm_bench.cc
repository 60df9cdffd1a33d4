// Google Benchmark of the fast CPU RMSNorm on one thread, beside memcpy of the same byte count.
//
// Each configuration registers a pair: RmsNormCpu/<dtype>/... and Memcpy/<dtype>/... . Both count
// bytes the same way, as memory traffic: the kernel's input read + output written (+ residual read
// + residual_out written) + weight read, and the memcpy's source read + destination written,
// copying half the kernel's byte count so that the two move equal traffic. The ratio of their
// bytes/s is the figure of merit (target: >= 70% at H = 4096, rows >= 4096, fp32 and bf16).
//
// The H = 4096, rows = 4096 tensors (32 MiB and up) are far larger than a core's share of the
// cache, so both stream from DRAM; those are the configurations. Two small ones (rows 48
// bf16, 24 fp32: under 1 MiB of traffic, resident in L2) show the kernel's compute ceiling instead.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu_rmsnorm.h"
#include "kernels/dtype.h"
#include "kernels/rmsnorm.h"

namespace normd {
namespace {

struct Config {
  DType dtype;
  DType weight_dtype;
  int64_t hidden;
  int64_t rows;
  bool residual;
};

int64_t TrafficBytes(const Config& c) {
  const int64_t tensor = c.rows * c.hidden * static_cast<int64_t>(ItemSize(c.dtype));
  const int64_t weight = c.hidden * static_cast<int64_t>(ItemSize(c.weight_dtype));
  return tensor * (c.residual ? 4 : 2) + weight;
}

// Buffers filled with plausible values (not zeros: the page must be really mapped and the fp16
// conversion's subnormal path must not be the only one taken).
std::vector<uint8_t> FilledBuffer(DType dtype, int64_t count) {
  std::vector<uint8_t> bytes(static_cast<size_t>(count) * ItemSize(dtype));
  for (int64_t i = 0; i < count; ++i) {
    StoreFromFloat(bytes.data(), dtype, static_cast<size_t>(i),
                   static_cast<float>(i % 97) * 0.03f - 1.4f);
  }
  return bytes;
}

void BM_RmsNormCpu(benchmark::State& state, Config c) {
  const int64_t n = c.rows * c.hidden;
  std::vector<uint8_t> input = FilledBuffer(c.dtype, n), output = FilledBuffer(c.dtype, n);
  std::vector<uint8_t> residual = FilledBuffer(c.dtype, c.residual ? n : 0);
  std::vector<uint8_t> residual_out = FilledBuffer(c.dtype, c.residual ? n : 0);
  std::vector<uint8_t> weight = FilledBuffer(c.weight_dtype, c.hidden);
  RmsNormSegment s;
  s.input = input.data();
  s.output = output.data();
  s.residual = c.residual ? residual.data() : nullptr;
  s.residual_out = c.residual ? residual_out.data() : nullptr;
  s.weight = weight.data();
  s.rows = c.rows;
  s.weight_dtype = c.weight_dtype;
  for (auto _ : state) {
    RmsNormCpuRows(c.dtype, c.hidden, s, 0, c.rows);
    benchmark::DoNotOptimize(output.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * TrafficBytes(c));
}

void BM_Memcpy(benchmark::State& state, Config c) {
  const auto half = static_cast<size_t>(TrafficBytes(c) / 2);
  std::vector<uint8_t> src(half, 0x3C), dst(half, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), half);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(2 * half));
}

std::string ConfigName(const Config& c) {
  std::string name = std::string(DTypeName(c.dtype)) + "/H:" + std::to_string(c.hidden) +
                     "/rows:" + std::to_string(c.rows) + (c.residual ? "/residual" : "/plain");
  if (c.weight_dtype != c.dtype) name += "/w:" + std::string(DTypeName(c.weight_dtype));
  return name;
}

void RegisterAll() {
  const Config configs[] = {
      {DType::kFloat32, DType::kFloat32, 4096, 4096, false},
      {DType::kBFloat16, DType::kBFloat16, 4096, 48, false},
      {DType::kFloat32, DType::kFloat32, 4096, 24, false},
      {DType::kBFloat16, DType::kBFloat16, 4096, 4096, false},
      {DType::kFloat16, DType::kFloat16, 4096, 4096, false},
      {DType::kBFloat16, DType::kFloat32, 4096, 4096, false},
      {DType::kFloat32, DType::kFloat32, 4096, 4096, true},
      {DType::kBFloat16, DType::kBFloat16, 4096, 4096, true},
      {DType::kFloat16, DType::kFloat16, 4096, 4096, true},
  };
  for (const Config& c : configs) {
    const std::string name = ConfigName(c);
    benchmark::RegisterBenchmark(("RmsNormCpu/" + name).c_str(), BM_RmsNormCpu, c)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("Memcpy/" + name).c_str(), BM_Memcpy, c)
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace
}  // namespace normd

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  normd::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
