// libFuzzer target: the batch packer (server/executors/staging_layout.h). The input bytes choose a
// launch: a dtype and hidden size, then a sequence of requests of random rows, with or without
// residual, with inline fp32 / same-dtype weights or a registered one, random eps and
// weight_offset, and values from the bytes. The launch is laid out and packed with the device base
// addresses equal to the host buffers, computed by the CPU kernel straight from the packed segment
// table (standing in for the GPU), and unpacked; the requests' tensors come in pieces, as from
// gRPC's slices. Then:
//  - every region is aligned, inside its buffer, and overlaps no other region;
//  - every request's output and residual_out match the fp64 reference (fp32 within 1e-5 relative,
//    fp16/bf16 within one unit in the last place), so no request got another's bytes or weight.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu_rmsnorm.h"
#include "kernels/dtype.h"
#include "kernels/reference.h"
#include "server/batching/batch_former.h"
#include "server/executors/staging_layout.h"

namespace {

using normd::DType;

// Reads the fuzz input as a stream of small choices; past its end it yields zeros.
class Choices {
 public:
  Choices(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint32_t Next(uint32_t bound) {  // in [0, bound)
    uint32_t v = 0;
    for (int i = 0; i < 2; ++i) v = v << 8 | (pos_ < size_ ? data_[pos_++] : 0);
    return bound == 0 ? 0 : v % bound;
  }
  // A value exactly representable in every dtype: k/16 for k in [-64, 64].
  float Value() { return (static_cast<float>(Next(129)) - 64.0f) / 16.0f; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

std::string Fill(Choices& c, DType dtype, int64_t count) {
  std::string bytes(static_cast<size_t>(count) * normd::ItemSize(dtype), '\0');
  for (int64_t i = 0; i < count; ++i)
    normd::StoreFromFloat(bytes.data(), dtype, static_cast<size_t>(i), c.Value());
  return bytes;
}

// `bytes` as a request's tensor that arrived in pieces (TensorBytes): cut at up to three points the
// input chooses, as gRPC's received slices cut it.
normd::TensorBytes InPieces(Choices& c, const std::string& bytes) {
  normd::TensorBytes pieces = normd::TensorBytes::Empty();
  size_t at = 0;
  for (int cut = 0; cut < 3 && at < bytes.size(); ++cut) {
    const size_t piece = c.Next(static_cast<uint32_t>(bytes.size() - at) + 1);
    pieces.Append(bytes.data() + at, static_cast<int64_t>(piece));
    at += piece;
  }
  pieces.Append(bytes.data() + at, static_cast<int64_t>(bytes.size() - at));
  return pieces;
}

struct Owned {  // what a request's pointers point into
  std::string input, residual, weight;
  std::vector<uint8_t> output, residual_out;
};

double Ulp(DType dtype, double v) {
  const int mantissa_bits = dtype == DType::kFloat16 ? 10 : 7;
  const int min_exp = dtype == DType::kFloat16 ? -14 : -126;
  const int e = v == 0.0 ? min_exp : std::max(std::ilogb(v), min_exp);
  return std::ldexp(1.0, e - mantissa_bits);
}

void CheckRegion(int64_t at, int64_t bytes, int64_t buffer_bytes,
                 std::vector<std::pair<int64_t, int64_t>>& taken) {
  if (at < 0 || at % normd::kStagingAlign != 0 || at + bytes > buffer_bytes) std::abort();
  for (const auto& [begin, end] : taken) {
    if (at < end && begin < at + bytes) std::abort();  // overlap
  }
  taken.emplace_back(at, at + bytes);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Choices c(data, size);
  const DType dtype = static_cast<DType>(1 + c.Next(3));
  const int64_t hidden = 1 + c.Next(300);
  const size_t n = 1 + c.Next(8);
  const auto registered = std::make_shared<normd::RegisteredWeight>();
  registered->id = "w";
  registered->dtype = DType::kFloat32;
  registered->hidden = hidden;
  registered->bytes = Fill(c, DType::kFloat32, hidden);

  normd::Launch launch;
  launch.dtype = dtype;
  launch.hidden = hidden;
  std::vector<std::unique_ptr<Owned>> owned;
  for (size_t i = 0; i < n; ++i) {
    auto o = std::make_unique<Owned>();
    auto item = std::make_unique<normd::WorkItem>();
    normd::ValidatedRequest& r = item->request;
    r.dtype = dtype;
    r.hidden = hidden;
    r.rows = 1 + c.Next(4);
    o->input = Fill(c, dtype, r.elements());
    r.input = InPieces(c, o->input);
    if (c.Next(2) == 1) {
      o->residual = Fill(c, dtype, r.elements());
      r.residual = InPieces(c, o->residual);
    }
    switch (c.Next(3)) {
      case 0:
        r.weight_dtype = DType::kFloat32;
        o->weight = Fill(c, DType::kFloat32, hidden);
        r.weight = InPieces(c, o->weight);
        break;
      case 1:
        r.weight_dtype = dtype;
        o->weight = Fill(c, dtype, hidden);
        r.weight = InPieces(c, o->weight);
        break;
      default:
        r.registered_weight = registered;
        r.weight_dtype = DType::kFloat32;
        r.weight = normd::TensorBytes::Contiguous(registered->bytes.data(),
                                                  static_cast<int64_t>(registered->bytes.size()));
    }
    r.eps = static_cast<float>(1 + c.Next(4)) * 1e-3f;  // > 0: an all-zero row gives zeros, not NaN
    r.weight_offset = static_cast<float>(c.Next(2));
    const size_t out_bytes = static_cast<size_t>(r.elements()) * normd::ItemSize(dtype);
    o->output.assign(out_bytes, 0xEE);
    item->output = o->output.data();
    if (r.has_residual()) {
      o->residual_out.assign(out_bytes, 0xEE);
      item->residual_out = o->residual_out.data();
    }
    launch.rows += r.rows;
    launch.bytes += r.payload_bytes();
    launch.items.push_back(std::move(item));
    owned.push_back(std::move(o));
  }

  const normd::StagingLayout layout = normd::LayOutLaunch(launch);
  // Regions: aligned, inside the buffers, disjoint.
  const auto itemsize = static_cast<int64_t>(normd::ItemSize(dtype));
  std::vector<std::pair<int64_t, int64_t>> up_taken{
      {0, static_cast<int64_t>(n * sizeof(normd::RmsNormSegment))}};
  std::vector<std::pair<int64_t, int64_t>> down_taken;
  for (size_t i = 0; i < n; ++i) {
    const normd::ValidatedRequest& r = launch.items[i]->request;
    const int64_t bytes = r.elements() * itemsize;
    CheckRegion(layout.input_at[i], bytes, layout.up_bytes, up_taken);
    CheckRegion(layout.output_at[i], bytes, layout.down_bytes, down_taken);
    if (r.has_residual()) {
      CheckRegion(layout.residual_at[i], bytes, layout.up_bytes, up_taken);
      CheckRegion(layout.residual_out_at[i], bytes, layout.down_bytes, down_taken);
    } else if (layout.residual_at[i] != -1 || layout.residual_out_at[i] != -1) {
      std::abort();
    }
    if (r.registered_weight == nullptr) {
      CheckRegion(layout.weight_at[i],
                  hidden * static_cast<int64_t>(normd::ItemSize(r.weight_dtype)), layout.up_bytes,
                  up_taken);
    } else if (layout.weight_at[i] != -1) {
      std::abort();
    }
  }

  // Pack with "device" = host, compute from the packed table, unpack.
  std::vector<uint8_t> up(static_cast<size_t>(layout.up_bytes)),
      down(static_cast<size_t>(layout.down_bytes));
  const absl::Status packed =
      normd::PackLaunch(launch, layout, up.data(), up.data(), down.data(),
                        [](const normd::RegisteredWeight& w) -> absl::StatusOr<const void*> {
                          return w.bytes.data();
                        });
  if (!packed.ok()) std::abort();
  const normd::RmsNormLaunch cpu_launch{dtype, hidden, launch.rows,
                                        reinterpret_cast<const normd::RmsNormSegment*>(up.data()),
                                        static_cast<int32_t>(n)};
  normd::RmsNormCpu(cpu_launch);
  normd::UnpackLaunch(launch, layout, down.data());

  // Every request against the reference, computed from the request's own buffers.
  for (size_t i = 0; i < n; ++i) {
    const normd::ValidatedRequest& r = launch.items[i]->request;
    normd::RmsNormSegment own{owned[i]->input.data(),
                              nullptr,
                              r.has_residual() ? owned[i]->residual.data() : nullptr,
                              nullptr,
                              r.registered_weight != nullptr ? r.registered_weight->bytes.data()
                                                             : owned[i]->weight.data(),
                              0,
                              r.rows,
                              r.eps,
                              r.weight_offset,
                              r.weight_dtype};
    std::vector<double> want(static_cast<size_t>(r.elements())),
        want_h(r.has_residual() ? want.size() : 0);
    normd::RmsNormReference(dtype, hidden, own, want.data(),
                            r.has_residual() ? want_h.data() : nullptr);
    for (size_t j = 0; j < want.size(); ++j) {
      const double got = normd::LoadAsFloat(owned[i]->output.data(), dtype, j);
      const double tol = dtype == DType::kFloat32 ? 1e-5 * std::max(std::fabs(want[j]), 1e-6)
                                                  : Ulp(dtype, std::fabs(want[j]));
      if (!(std::fabs(got - want[j]) <= tol)) std::abort();
      if (r.has_residual()) {
        const double got_h = normd::LoadAsFloat(owned[i]->residual_out.data(), dtype, j);
        if (!(std::fabs(got_h - want_h[j]) <= (dtype == DType::kFloat32
                                                   ? 1e-6 * std::fabs(want_h[j])
                                                   : Ulp(dtype, std::fabs(want_h[j]))))) {
          std::abort();
        }
      }
    }
  }
  return 0;
}
