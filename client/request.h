// What one Normalize call is made of, on the client side: its options, the weight it uses (inline
// or a registered handle), the marshalled request (PreparedRequest) and the typed result.
//
// A PreparedRequest is the wire message, built once. Sending it again costs no marshalling: a load
// generator, or a caller that normalizes the same activations against several replicas, prepares
// once and shares it (std::shared_ptr<const PreparedRequest>) between calls, even concurrent ones.
#ifndef NORMD_CLIENT_REQUEST_H_
#define NORMD_CLIENT_REQUEST_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "client/region.h"
#include "client/tensor.h"
#include "normd/v1/normd.pb.h"

namespace normd {

// A weight registered with normd (Client::RegisterWeight). Copyable; copies share one registration.
// It keeps the weight's encoded bytes (a weight is one row, [hidden]) so that the client can
// register it again when a server answers NOT_FOUND (it restarted, or evicted the weight), which
// callers never see.
class Weight {
 public:
  std::string id() const;
  DType dtype() const { return state_->dtype; }
  int64_t hidden() const { return state_->hidden; }

 private:
  friend class Client;
  struct State {
    DType dtype = DType::kFloat32;
    int64_t hidden = 0;
    normd::v1::Tensor tensor;  // what RegisterWeight sends
    mutable normd::Mutex mu;
    std::string id ABSL_GUARDED_BY(mu);
  };
  explicit Weight(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

// The weight of a call: an inline tensor (sent with every request) or a registered Weight (sent as
// its id). Converts implicitly from either.
class WeightSource {
 public:
  WeightSource(const TensorView& inline_weight)
      : inline_(inline_weight) {}                                      // NOLINT(runtime/explicit)
  WeightSource(const Weight& registered) : registered_(registered) {}  // NOLINT(runtime/explicit)
  const std::optional<TensorView>& inline_weight() const { return inline_; }
  const std::optional<Weight>& registered() const { return registered_; }

 private:
  std::optional<TensorView> inline_;
  std::optional<Weight> registered_;
};

struct NormalizeOptions {
  float eps = 1e-6f;
  // 1 for Gemma-style (1 + w) weights.
  float weight_offset = 0.0f;
  // Same shape as the input; the result then carries residual_out = input + residual.
  std::optional<TensorView> residual;
  // The dtype the request travels and is computed in; the input (and residual) are converted to it
  // while marshalling. Unset: the input's own dtype.
  std::optional<DType> wire_dtype;
  std::string request_id;
  // Zero: the client's default deadline. Counted from when the call starts.
  absl::Duration deadline = absl::ZeroDuration();
  // Shared memory (docs/SHARED_MEMORY.md): the residual in a region instead of `residual`, and
  // where normd writes the output and residual_out instead of returning them (the result's tensors
  // then carry dtype, shape and the reference, and no bytes). Regions of this Client's only.
  std::optional<RegionTensor> residual_region;
  std::optional<RegionTensor> output_region;
  std::optional<RegionTensor> residual_out_region;
};

// A marshalled Normalize request, reusable and shareable between threads once built.
class PreparedRequest {
 public:
  const normd::v1::NormalizeRequest& proto() const { return proto_; }
  absl::Duration deadline() const { return deadline_; }
  // The bytes of input and residual in the message (none for tensors in regions).
  size_t payload_bytes() const {
    return proto_.input().data().size() +
           (proto_.has_residual() ? proto_.residual().data().size() : 0);
  }
  int64_t rows() const;

 private:
  friend class Client;
  normd::v1::NormalizeRequest proto_;
  std::optional<Weight> weight_;  // set when the request names a registered weight
  absl::Duration deadline_ = absl::ZeroDuration();
};

struct NormalizeResult {
  Tensor output;
  std::optional<Tensor> residual_out;
  std::string request_id;
  normd::v1::Timing timing;  // the server's queue wait, compute time and launch size
};

using NormalizeCallback = std::function<void(absl::StatusOr<NormalizeResult>)>;

// Moves the tensors out of `response` into a result.
absl::StatusOr<NormalizeResult> ToNormalizeResult(normd::v1::NormalizeResponse&& response);

}  // namespace normd

#endif  // NORMD_CLIENT_REQUEST_H_
