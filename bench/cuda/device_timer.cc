// Device pools, graph-replay timing and the reference check of the kernel benchmark
// (device_timer.h).
#include "bench/cuda/device_timer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "bench/cuda/bench_util.h"
#include "kernels/reference.h"

namespace normd::bench {
namespace {

// 16-bit patterns of bf16 values in [-2, 2] (see DevicePool), 2 bytes each.
std::vector<uint16_t> RandomHalves(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::vector<uint16_t> v(count);
  for (uint16_t& h : v) h = FloatToBFloat16(value(rng));
  return v;
}

// The relative spacing of dtype's values (one unit in the last place of a value in [1, 2)).
double RelativeSpacing(DType dtype) {
  return dtype == DType::kFloat32 ? 0x1p-23 : dtype == DType::kFloat16 ? 0x1p-10 : 0x1p-7;
}

}  // namespace

int64_t DeviceL2Bytes() {
  int device = 0, l2 = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  CHECK_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  return l2 > 0 ? l2 : (60 << 20);
}

DevicePool::DevicePool(size_t bytes, uint64_t seed) : bytes_(bytes) {
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&data_), bytes));
  // One 64 MiB chunk of random patterns, copied over the whole pool.
  const std::vector<uint16_t> chunk = RandomHalves(size_t{32} << 20, seed);
  const size_t chunk_bytes = chunk.size() * 2;
  for (size_t at = 0; at < bytes; at += chunk_bytes) {
    CHECK_CUDA(cudaMemcpy(data_ + at, chunk.data(), std::min(chunk_bytes, bytes - at),
                          cudaMemcpyHostToDevice));
  }
}

DevicePool::~DevicePool() { cudaFree(data_); }

DeviceWeights::DeviceWeights() {
  constexpr size_t kCount = 65536;
  const std::vector<uint16_t> halves = RandomHalves(kCount, 7);
  std::vector<float> floats(kCount);
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> value(0.5f, 1.5f);
  for (float& f : floats) f = value(rng);
  CHECK_CUDA(cudaMalloc(&sixteen_bit, kCount * 2));
  CHECK_CUDA(cudaMalloc(&fp32, kCount * 4));
  CHECK_CUDA(cudaMemcpy(sixteen_bit, halves.data(), kCount * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(fp32, floats.data(), kCount * 4, cudaMemcpyHostToDevice));
}

DeviceWeights::~DeviceWeights() {
  cudaFree(sixteen_bit);
  cudaFree(fp32);
}

const void* DeviceWeights::For(DType dtype) const {
  return dtype == DType::kFloat32 ? fp32 : sixteen_bit;
}

int RotationSets(int64_t footprint_bytes, int limit) {
  const int64_t want = (3 * DeviceL2Bytes()) / std::max<int64_t>(footprint_bytes, 1) + 1;
  return static_cast<int>(std::clamp<int64_t>(want, 1, std::max(limit, 1)));
}

int CallsFor(double expected_us, int sets) {
  const int for_time = static_cast<int>(std::ceil(300.0 / std::max(expected_us, 1.0)));
  return std::clamp(std::max(for_time, sets), 3, 400);
}

double GraphTimeUs(const std::function<cudaError_t(int, cudaStream_t)>& launch, int calls,
                   int replays, cudaStream_t stream) {
  CHECK_CUDA(launch(0, stream));  // loads the module and sets attributes outside the capture
  CHECK_CUDA(cudaStreamSynchronize(stream));
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < calls; ++i) {
    const cudaError_t e = launch(i, stream);
    if (e != cudaSuccess) {
      std::fprintf(stderr, "launch %d in capture: %s\n", i, cudaGetErrorString(e));
      std::exit(1);
    }
  }
  CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  cudaEvent_t start = nullptr, stop = nullptr;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<double> per_call;
  for (int r = 0; r < replays; ++r) {
    CHECK_CUDA(cudaEventRecord(start, stream));
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    per_call.push_back(1000.0 * ms / calls);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return Median(per_call);
}

int64_t CheckRowsOnDevice(DType dtype, int64_t hidden, const RmsNormSegment& segment,
                          const char* what) {
  const size_t item = ItemSize(dtype);
  const size_t row_bytes = static_cast<size_t>(hidden) * item;
  const size_t weight_bytes = static_cast<size_t>(hidden) * ItemSize(segment.weight_dtype);
  std::vector<unsigned char> x(row_bytes), r(row_bytes), y(row_bytes), ro(row_bytes),
      w(weight_bytes);
  std::vector<double> ref(static_cast<size_t>(hidden)), ref_ro(static_cast<size_t>(hidden));
  CHECK_CUDA(cudaMemcpy(w.data(), segment.weight, weight_bytes, cudaMemcpyDeviceToHost));
  int64_t bad = 0;
  for (const int64_t row : {int64_t{0}, segment.rows / 2, segment.rows - 1}) {
    const size_t at = static_cast<size_t>(row) * row_bytes;
    auto fetch = [&](const void* base, std::vector<unsigned char>& into) {
      CHECK_CUDA(cudaMemcpy(into.data(), static_cast<const unsigned char*>(base) + at, row_bytes,
                            cudaMemcpyDeviceToHost));
    };
    fetch(segment.input, x);
    fetch(segment.output, y);
    if (segment.residual != nullptr) {
      fetch(segment.residual, r);
      fetch(segment.residual_out, ro);
    }
    RmsNormSegment host = segment;
    host.input = x.data();
    host.residual = segment.residual != nullptr ? r.data() : nullptr;
    host.weight = w.data();
    host.rows = 1;
    RmsNormReference(dtype, hidden, host, ref.data(), ref_ro.data());
    auto compare = [&](const std::vector<unsigned char>& got_bytes, const std::vector<double>& want,
                       const char* tensor) {
      double scale = 0;
      for (const double v : want) scale = std::max(scale, std::fabs(v));
      for (int64_t i = 0; i < hidden; ++i) {
        const double got = LoadAsFloat(got_bytes.data(), dtype, static_cast<size_t>(i));
        const double ref_i = want[static_cast<size_t>(i)];
        if (!(std::fabs(got - ref_i) <=
              2 * RelativeSpacing(dtype) * std::fabs(ref_i) + 1e-6 * scale) &&
            bad++ == 0) {
          std::printf("# MISMATCH %s %s row %lld element %lld: %.9g, reference %.9g\n", what,
                      tensor, static_cast<long long>(row), static_cast<long long>(i), got, ref_i);
        }
      }
    };
    compare(y, ref, "output");
    if (segment.residual != nullptr) compare(ro, ref_ro, "residual_out");
  }
  return bad;
}

}  // namespace normd::bench
