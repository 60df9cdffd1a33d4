#include "client/shm_transport.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace normd {
namespace {

// Where the request's tensors go in the region: each at a 4 KiB boundary.
int64_t Aligned(int64_t bytes) { return (bytes + 4095) / 4096 * 4096; }

}  // namespace

absl::StatusOr<std::unique_ptr<SharedMemoryTransport>> SharedMemoryTransport::Create(
    Client& client, int64_t capacity_bytes) {
  NORMD_ASSIGN_OR_RETURN(std::unique_ptr<SharedMemory> memory,
                         SharedMemory::Create(capacity_bytes));
  NORMD_ASSIGN_OR_RETURN(RegisteredRegion region,
                         client.RegisterSystemRegion(*memory, "shm-transport"));
  return std::unique_ptr<SharedMemoryTransport>(
      new SharedMemoryTransport(client, std::move(memory), std::move(region)));
}

absl::StatusOr<NormalizeResult> SharedMemoryTransport::Normalize(const TensorView& input,
                                                                 const WeightSource& weight,
                                                                 const NormalizeOptions& options) {
  if (options.residual_region || options.output_region || options.residual_out_region) {
    return absl::InvalidArgumentError(
        "SharedMemoryTransport places the tensors itself: leave the options' regions unset");
  }
  // Encode as the bytes transport would (the wire dtype's conversion included), then place.
  const DType wire = options.wire_dtype.value_or(input.dtype());
  normd::v1::Tensor encoded_input, encoded_residual;
  NORMD_RETURN_IF_ERROR(EncodeTensor(input, wire, &encoded_input));
  if (options.residual)
    NORMD_RETURN_IF_ERROR(EncodeTensor(*options.residual, wire, &encoded_residual));
  const auto bytes = static_cast<int64_t>(encoded_input.data().size());
  const int64_t slot = Aligned(bytes);
  const int tensors = options.residual ? 4 : 2;  // in, residual, out, residual_out
  if (slot > memory_->size() / tensors) {
    return absl::ResourceExhaustedError(absl::StrCat("request: ", tensors, " tensors of ", bytes,
                                                     " bytes do not fit the ", memory_->size(),
                                                     "-byte region of this SharedMemoryTransport"));
  }
  const std::vector<int64_t> shape(encoded_input.shape().begin(), encoded_input.shape().end());
  NormalizeOptions placed = options;
  placed.residual.reset();
  placed.wire_dtype.reset();
  normd::MutexLock lock(&mu_);
  std::memcpy(memory_->data(), encoded_input.data().data(), static_cast<size_t>(bytes));
  placed.output_region = region_.Tensor(slot, wire, shape);
  if (options.residual) {
    std::memcpy(memory_->data() + 2 * slot, encoded_residual.data().data(),
                static_cast<size_t>(bytes));
    placed.residual_region = region_.Tensor(2 * slot, wire, shape);
    placed.residual_out_region = region_.Tensor(3 * slot, wire, shape);
  }
  NORMD_ASSIGN_OR_RETURN(NormalizeResult result,
                         client_.Normalize(region_.Tensor(0, wire, shape), weight, placed));
  // The outputs, copied out of the region into the result as the bytes transport returns them.
  auto take = [&](int64_t at) {
    normd::v1::Tensor tensor;
    tensor.set_dtype(static_cast<normd::v1::DType>(wire));
    for (int64_t d : shape) tensor.add_shape(d);
    tensor.set_data(memory_->data() + at, static_cast<size_t>(bytes));
    return Tensor::FromProto(std::move(tensor));
  };
  NORMD_ASSIGN_OR_RETURN(result.output, take(slot));
  if (options.residual) {
    NORMD_ASSIGN_OR_RETURN(result.residual_out, take(3 * slot));
  }
  return result;
}

}  // namespace normd
