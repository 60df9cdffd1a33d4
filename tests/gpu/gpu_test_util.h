// Shared helpers of the GPU kernel tests: device discovery (tests skip without a device), device
// buffers with guard bytes, random host tensors, and the comparison with the fp64 reference.
#ifndef NORMD_TESTS_GPU_GPU_TEST_UTIL_H_
#define NORMD_TESTS_GPU_GPU_TEST_UTIL_H_

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/dtype.h"
#include "kernels/rmsnorm.h"

namespace normd::gputest {

// Empty when a CUDA device is usable, else why not (for GTEST_SKIP).
std::string NoDeviceReason();

#define NORMD_REQUIRE_DEVICE()                                   \
  do {                                                           \
    const std::string why = ::normd::gputest::NoDeviceReason();  \
    if (!why.empty()) GTEST_SKIP() << "no CUDA device: " << why; \
  } while (0)

#define NORMD_CUDA_OK(expr)                                                                \
  do {                                                                                     \
    const cudaError_t normd_err_ = (expr);                                                 \
    ASSERT_EQ(normd_err_, cudaSuccess) << #expr << ": " << cudaGetErrorString(normd_err_); \
  } while (0)

// Output bytes are set to this before every run; 0xFF.. is a NaN in every dtype, so an element the
// kernel did not write fails any comparison with a finite reference.
inline constexpr unsigned char kPoisonByte = 0xFF;
// Guard bytes around a buffer, checked unchanged after a run.
inline constexpr unsigned char kGuardByte = 0xA5;
inline constexpr size_t kGuardBytes = 64;

// A device allocation of `bytes` usable bytes starting `offset` bytes past a 256-byte aligned base,
// with kGuardBytes of guard on both sides.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(size_t bytes, size_t offset = 0);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;

  void* get() const { return data_; }
  size_t bytes() const { return bytes_; }
  bool ok() const { return base_ != nullptr; }
  // Copies in, copies out, fills (synchronously).
  void Upload(const void* host, size_t bytes) const;
  void Download(void* host, size_t bytes) const;
  void Fill(unsigned char byte) const;
  // Writes kGuardByte to the guards; GuardsIntact() says whether they still hold it.
  void ArmGuards() const;
  bool GuardsIntact() const;

 private:
  unsigned char* base_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  size_t offset_ = 0;
};

// Host tensor of `count` elements of `dtype`, as raw bytes.
using HostBytes = std::vector<unsigned char>;

// A fast deterministic generator for test data.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t Next();
  float Uniform(float lo, float hi);

 private:
  uint64_t state_;
};

// count random values in [lo, hi), each exactly representable in dtype.
HostBytes RandomTensor(DType dtype, size_t count, float lo, float hi, Random& rng);

// A per-process seed (from the clock unless NORMD_TEST_SEED is set), printed once, so that every
// run draws fresh inputs and a failure can be replayed.
uint64_t ProcessSeed();

// Compares rows `rows_to_check` (segment-local) of the kernel's output (and residual_out, when the
// segment has a residual and ro_bytes is not null) with RmsNormReference over host_segment, whose
// input/residual/weight point at host copies. Reports up to a few mismatches with ADD_FAILURE and
// returns the number of mismatching elements.
int64_t CheckRows(DType dtype, int64_t hidden, const RmsNormSegment& host_segment,
                  const unsigned char* out_bytes, const unsigned char* ro_bytes,
                  const std::vector<int64_t>& rows_to_check, const std::string& context);

// All rows when rows*hidden is small, else the first and last 48 rows, 96 random rows, and `extra`.
std::vector<int64_t> RowsToCheck(int64_t rows, int64_t hidden, Random& rng,
                                 const std::vector<int64_t>& extra = {});

// Number of elements still holding the poison pattern.
int64_t CountPoisoned(DType dtype, const unsigned char* bytes, size_t count);

}  // namespace normd::gputest

#endif  // NORMD_TESTS_GPU_GPU_TEST_UTIL_H_
