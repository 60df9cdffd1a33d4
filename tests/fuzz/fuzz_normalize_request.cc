// libFuzzer target: arbitrary bytes as a NormalizeRequest, through decoding and validation, and,
// when validation accepts the request, through the CPU kernel on exactly the buffers validation
// vouched for. Crashes, sanitizer reports (ASan + UBSan) and broken validation promises (traps
// below) are findings; a clean refusal is the expected outcome for most inputs.
//
// The bytes are decoded twice: by protobuf, and by normd's RequestWire (server/rpc/request_wire.h)
// from slices of a size chosen by the input's length, as gRPC would hand them over. The two must
// agree: both refuse, or both give the same message, the wire's tensor data (kept in the slices)
// equal to protobuf's, and the same validation outcome.
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu_rmsnorm.h"
#include "normd/v1/normd.pb.h"
#include "server/rpc/request_validation.h"
#include "server/rpc/request_wire.h"
#include "server/rpc/weight_registry.h"

namespace {

// A registry holding one fp32 and one bf16 weight, so that weight_id requests can get past the
// lookup (the seed corpus carries their ids; see tests/fuzz/make_seeds.py).
normd::WeightRegistry& Registry() {
  static normd::WeightRegistry* registry = [] {
    auto* r = new normd::WeightRegistry(1 << 20);
    std::string f32(8 * 4, '\0'), bf16(4 * 2, '\0');
    for (int i = 0; i < 8; ++i) {
      const float v = 0.5f + static_cast<float>(i);
      std::memcpy(&f32[static_cast<size_t>(i) * 4], &v, 4);
    }
    for (int i = 0; i < 4; ++i) bf16[static_cast<size_t>(i) * 2 + 1] = 0x3F;  // 0x3F00 = 0.5
    (void)r->Register(normd::DType::kFloat32, 8, f32);
    (void)r->Register(normd::DType::kBFloat16, 4, bf16);
    return r;
  }();
  return *registry;
}

// The bytes as gRPC might deliver them: slices of 1 to 97 bytes (the size taken from the input's
// length, so that the corpus stays plain NormalizeRequests), the last one shorter.
grpc::ByteBuffer InSlices(const uint8_t* data, size_t size) {
  const size_t piece = 1 + (size * 2654435761u >> 7) % 97;
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < size; at += piece) {
    slices.emplace_back(data + at, std::min(piece, size - at));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

std::string Gathered(const normd::TensorBytes& bytes) {
  std::string out(static_cast<size_t>(bytes.size()), '\0');
  bytes.CopyTo(out.data());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  normd::v1::NormalizeRequest request;
  const bool parsed = request.ParseFromArray(data, static_cast<int>(size));
  normd::RequestWire wire;
  const bool wire_parsed = wire.Parse(InSlices(data, size)).ok();
  if (parsed != wire_parsed) std::abort();
  if (!parsed) return 0;
  // The same request: the wire's message with its data put back is protobuf's.
  normd::v1::NormalizeRequest rebuilt = wire.message();
  if (rebuilt.has_input()) rebuilt.mutable_input()->set_data(Gathered(wire.input_data()));
  if (rebuilt.has_residual() != wire.residual_data().present()) std::abort();
  if (rebuilt.has_residual()) rebuilt.mutable_residual()->set_data(Gathered(wire.residual_data()));
  if (rebuilt.has_weight() != wire.weight_data().present()) std::abort();
  if (rebuilt.has_weight()) rebuilt.mutable_weight()->set_data(Gathered(wire.weight_data()));
  if (rebuilt.SerializeAsString() != request.SerializeAsString()) std::abort();

  normd::ValidationLimits limits;
  limits.max_hidden = 4096;
  absl::StatusOr<normd::ValidatedRequest> validated =
      normd::ValidateNormalizeRequest(request, limits, Registry());
  absl::StatusOr<normd::ValidatedRequest> wire_validated =
      normd::ValidateNormalizeRequest(wire.message(), wire.input_data(), wire.residual_data(),
                                      wire.weight_data(), limits, Registry());
  if (validated.status() != wire_validated.status()) std::abort();
  if (!validated.ok()) {
    // A refusal must say what is wrong.
    if (validated.status().message().empty()) std::abort();
    return 0;
  }
  const normd::ValidatedRequest& r = *validated;
  // The promises the rest of normd relies on.
  const size_t itemsize = normd::ItemSize(r.dtype);
  if (r.rows <= 0 || r.hidden <= 0 || r.hidden > limits.max_hidden) std::abort();
  if (request.input().data().size() != static_cast<size_t>(r.elements()) * itemsize) std::abort();
  if (r.input.size() != static_cast<int64_t>(request.input().data().size())) std::abort();
  if (r.has_residual() && request.residual().data().size() != request.input().data().size())
    std::abort();
  const int64_t weight_bytes = r.hidden * static_cast<int64_t>(normd::ItemSize(r.weight_dtype));
  if (!r.weight.present() || r.weight.size() != weight_bytes) std::abort();
  const normd::ValidatedRequest& w = *wire_validated;
  if (w.input.size() != r.input.size() || w.has_residual() != r.has_residual() ||
      (w.has_residual() && w.residual.size() != r.residual.size())) {
    std::abort();
  }
  if (w.weight_dtype != r.weight_dtype || Gathered(w.weight) != Gathered(r.weight)) std::abort();
  // The kernel reads exactly what validation vouched for (ASan catches a byte more), from the
  // wire's pieces gathered into buffers of exactly that size.
  const std::string input = Gathered(w.input);
  const std::string residual = w.has_residual() ? Gathered(w.residual) : std::string();
  const std::string weight = Gathered(w.weight);
  std::vector<uint8_t> output(static_cast<size_t>(r.elements()) * itemsize);
  std::vector<uint8_t> residual_out(r.has_residual() ? output.size() : 0);
  normd::RmsNormSegment segment{input.data(),
                                output.data(),
                                r.has_residual() ? residual.data() : nullptr,
                                r.has_residual() ? residual_out.data() : nullptr,
                                weight.data(),
                                0,
                                r.rows,
                                r.eps,
                                r.weight_offset,
                                r.weight_dtype};
  normd::RmsNormCpuRows(r.dtype, r.hidden, segment, 0, r.rows);
  return 0;
}
