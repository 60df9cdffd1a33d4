#include "bench/load/cuda_load_memory.h"

#include "client/cuda_region_memory.h"

namespace normd::bench {
namespace {

class CudaLoadMemory : public DeviceLoadMemory {
 public:
  explicit CudaLoadMemory(std::unique_ptr<CudaRegionMemory> memory) : memory_(std::move(memory)) {}
  absl::Status CopyFromHost(int64_t offset, const void* from, int64_t bytes) override {
    return memory_->CopyFromHost(offset, from, bytes);
  }
  absl::StatusOr<RegisteredRegion> Register(Client& client) override {
    return RegisterCudaRegion(client, *memory_, "normbench");
  }

 private:
  std::unique_ptr<CudaRegionMemory> memory_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceLoadMemory>> AllocateDeviceLoadMemory(int64_t bytes) {
  absl::StatusOr<std::unique_ptr<CudaRegionMemory>> memory = CudaRegionMemory::Allocate(0, bytes);
  if (!memory.ok()) return memory.status();
  return std::make_unique<CudaLoadMemory>(*std::move(memory));
}

}  // namespace normd::bench
