#include "bench/load/region_load.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "bench/load/cuda_load_memory.h"

namespace normd::bench {
namespace {

// Each slot's tensors start on a 4 KiB boundary.
int64_t Aligned(int64_t bytes) { return (bytes + 4095) / 4096 * 4096; }

// The tensor's bytes in `dtype`, as the bytes transport would send them.
absl::StatusOr<std::string> Encode(const std::vector<float>& values, DType dtype,
                                   std::vector<int64_t> shape) {
  normd::v1::Tensor tensor;
  NORMD_RETURN_IF_ERROR(
      EncodeTensor(TensorView::Float32(values, std::move(shape)), dtype, &tensor));
  return std::move(*tensor.mutable_data());
}

}  // namespace

RegionLoad::RegionLoad() = default;
RegionLoad::~RegionLoad() { regions.clear(); }

absl::StatusOr<Transport> ParseTransport(const std::string& name) {
  if (name == "bytes") return Transport::kBytes;
  if (name == "shm") return Transport::kSharedMemory;
  if (name == "cuda-ipc") return Transport::kCudaIpc;
  return absl::InvalidArgumentError(
      absl::StrCat("--transport = '", name, "': expected bytes, shm or cuda-ipc"));
}

absl::StatusOr<std::unique_ptr<RegionLoad>> MakeRegionLoad(Transport transport,
                                                           const std::vector<Client*>& clients,
                                                           int slots, const LoadTensors& tensors,
                                                           const WeightSource& weight) {
  const std::vector<int64_t> shape = {tensors.rows, tensors.hidden};
  NORMD_ASSIGN_OR_RETURN(std::string input, Encode(tensors.input, tensors.dtype, shape));
  std::string residual;
  const bool has_residual = !tensors.residual.empty();
  if (has_residual) {
    NORMD_ASSIGN_OR_RETURN(residual, Encode(tensors.residual, tensors.dtype, shape));
  }
  // A slot: input, output (and residual, residual_out).
  const auto bytes = static_cast<int64_t>(input.size());
  const int64_t tensor_stride = Aligned(bytes);
  const int64_t slot_stride = tensor_stride * (has_residual ? 4 : 2);
  const int64_t total = slot_stride * slots;
  auto load = std::make_unique<RegionLoad>();
  auto write = [&](int64_t at, const std::string& data) -> absl::Status {
    if (load->memory != nullptr) {
      std::copy(data.begin(), data.end(), load->memory->data() + at);
      return absl::OkStatus();
    }
    return load->device_memory->CopyFromHost(at, data.data(), static_cast<int64_t>(data.size()));
  };
  if (transport == Transport::kSharedMemory) {
    NORMD_ASSIGN_OR_RETURN(load->memory, SharedMemory::Create(total));
  } else {
    NORMD_ASSIGN_OR_RETURN(load->device_memory, AllocateDeviceLoadMemory(total));
  }
  for (int s = 0; s < slots; ++s) {
    NORMD_RETURN_IF_ERROR(write(s * slot_stride, input));
    if (has_residual) NORMD_RETURN_IF_ERROR(write(s * slot_stride + 2 * tensor_stride, residual));
  }
  for (Client* client : clients) {
    absl::StatusOr<RegisteredRegion> region =
        load->memory != nullptr ? client->RegisterSystemRegion(*load->memory, "normbench")
                                : load->device_memory->Register(*client);
    if (!region.ok()) return region.status();
    std::vector<std::shared_ptr<const PreparedRequest>> row;
    for (int s = 0; s < slots; ++s) {
      const int64_t at = s * slot_stride;
      NormalizeOptions options;
      options.eps = 1e-6f;
      options.output_region = region->Tensor(at + tensor_stride, tensors.dtype, shape);
      if (has_residual) {
        options.residual_region = region->Tensor(at + 2 * tensor_stride, tensors.dtype, shape);
        options.residual_out_region = region->Tensor(at + 3 * tensor_stride, tensors.dtype, shape);
      }
      NORMD_ASSIGN_OR_RETURN(
          PreparedRequest prepared,
          client->Prepare(region->Tensor(at, tensors.dtype, shape), weight, options));
      row.push_back(std::make_shared<const PreparedRequest>(std::move(prepared)));
    }
    load->requests.push_back(std::move(row));
    load->regions.push_back(*std::move(region));
  }
  return load;
}

}  // namespace normd::bench
