// libFuzzer target: arbitrary bytes as a NormalizeRequest, through decoding and validation, and, when
// validation accepts the request, through the CPU kernel on exactly the buffers validation vouched
// for. Crashes, sanitizer reports (ASan + UBSan) and broken validation promises (traps below) are
// findings; a clean refusal is the expected outcome for most inputs.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/cpu_rmsnorm.h"
#include "normd/v1/normd.pb.h"
#include "server/request_validation.h"
#include "server/weight_registry.h"

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  normd::v1::NormalizeRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  normd::ValidationLimits limits;
  limits.max_hidden = 4096;
  absl::StatusOr<normd::ValidatedRequest> validated = normd::ValidateNormalizeRequest(request, limits, Registry());
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
  if (r.residual != nullptr && request.residual().data().size() != request.input().data().size()) std::abort();
  if (r.weight == nullptr) std::abort();
  // The kernel reads exactly what validation vouched for (ASan catches a byte more).
  std::vector<uint8_t> output(static_cast<size_t>(r.elements()) * itemsize);
  std::vector<uint8_t> residual_out(r.residual != nullptr ? output.size() : 0);
  normd::RmsNormSegment segment{r.input, output.data(), r.residual,
                                r.residual != nullptr ? residual_out.data() : nullptr,
                                r.weight, 0, r.rows, r.eps, r.weight_offset, r.weight_dtype};
  normd::RmsNormCpuRows(r.dtype, r.hidden, segment, 0, r.rows);
  return 0;
}
