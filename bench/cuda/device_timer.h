// What the kernel benchmark's modes share: device pools of finite test data that launches rotate
// through (so that each launch finds its data outside L2, as after a flush), the kernel time of a
// launch from CUDA graph replay (no host dispatch in the figure), and a check of a launch's
// output rows against the fp64 reference.
#ifndef NORMD_BENCH_CUDA_DEVICE_TIMER_H_
#define NORMD_BENCH_CUDA_DEVICE_TIMER_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "kernels/dtype.h"
#include "kernels/rmsnorm.h"

namespace normd::bench {

// L2 of the GPU the footprints are sized against (60 MB on the H200; the pools read it off the
// device).
int64_t DeviceL2Bytes();

// One device allocation of `bytes`, filled with 16-bit patterns that are bf16 values in [-2, 2]:
// read as bf16, fp16 (within about +-2 as well) or fp32 (the high half sets the value) every
// element is finite and of moderate size, so any dtype's rows can be cut from it.
class DevicePool {
 public:
  DevicePool(size_t bytes, uint64_t seed);
  ~DevicePool();
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;
  unsigned char* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  unsigned char* data_ = nullptr;
  size_t bytes_ = 0;
};

// Weights for every dtype, H up to 65536: bf16/fp16 patterns as above, fp32 in [0.5, 1.5].
struct DeviceWeights {
  DeviceWeights();
  ~DeviceWeights();
  const void* For(DType dtype) const;
  void* sixteen_bit = nullptr;
  void* fp32 = nullptr;
};

// How many copies of a launch's data to rotate through so that the footprint of the others
// passes three times L2 (at most `limit`, at least 1).
int RotationSets(int64_t footprint_bytes, int limit);

// The median kernel time of one call of `launch` in microseconds: `launch(i, stream)` (i = 0, 1,
// ... the call's rotation index) is captured `calls` times into a CUDA graph, the graph replayed
// once to warm up and then `replays` times between events. Launch errors exit the program.
double GraphTimeUs(const std::function<cudaError_t(int, cudaStream_t)>& launch, int calls,
                   int replays, cudaStream_t stream);

// Calls per graph for a launch expected to take about `expected_us`: enough that a replay lasts
// ~0.3 ms (and at least `sets`, so each rotation set is used), at most 400.
int CallsFor(double expected_us, int sets);

// Checks rows {0, rows/2, rows-1} of a finished single-segment run (output, and residual_out
// with a residual) against the fp64 reference, within twice the dtype's relative spacing of the
// value (about two units in the last place) plus 1e-6 of the row's largest output. Returns the
// number of mismatching elements (and prints the first).
int64_t CheckRowsOnDevice(DType dtype, int64_t hidden, const RmsNormSegment& segment,
                          const char* what);

}  // namespace normd::bench

#endif  // NORMD_BENCH_CUDA_DEVICE_TIMER_H_
