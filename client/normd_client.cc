#include "client/normd_client.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "client/grpc_status.h"

namespace normd {
namespace {

// Attempts of one Normalize beyond the channel's own UNAVAILABLE retries: 0 sends the request as
// prepared; 1 follows a NOT_FOUND and re-registration; 2 sends the weight inline (a load balancer
// sent attempt 1 to a replica that did not get the registration either).
constexpr int kLastAttempt = 2;

// Where a failed call's status keeps the server's address (an absl::Status payload, not part of the
// message, so that messages stay what the server wrote).
constexpr absl::string_view kPeerPayloadUrl = "type.normd.dev/normd.client.Peer";

// The weight tensor for a request of `wire_dtype`: the server takes the input's dtype or float32,
// so a weight of a third dtype is widened to float32 (exact).
absl::Status EncodeWeight(const TensorView& weight, DType wire_dtype, normd::v1::Tensor* out) {
  const DType dtype = weight.dtype() == wire_dtype ? wire_dtype : DType::kFloat32;
  return EncodeTensor(weight, dtype, out);
}

}  // namespace

absl::Status FromGrpcCall(const grpc::Status& status, const grpc::ClientContext& context,
                          absl::string_view channel_target) {
  absl::Status result = FromGrpcStatus(status);
  if (result.ok()) return result;
  // For a call that never got a connection (no replica ready, a pick that raced a replica's death,
  // the deadline spent waiting) gRPC's peer() is the channel's target, which names no one server.
  const std::string peer = context.peer();
  if (!peer.empty() && peer != channel_target) result.SetPayload(kPeerPayloadUrl, absl::Cord(peer));
  return result;
}

std::string PeerOf(const absl::Status& status) {
  const auto peer = status.GetPayload(kPeerPayloadUrl);  // absl::optional in this Abseil
  return peer ? std::string(*peer) : std::string();
}

// One asynchronous Normalize: the request's retries after NOT_FOUND run as a chain of callbacks, so
// that no gRPC thread ever blocks. Owned by shared_ptrs held by the callbacks in flight.
class Client::AsyncCall : public std::enable_shared_from_this<AsyncCall> {
 public:
  AsyncCall(Client* client, std::shared_ptr<const PreparedRequest> prepared, NormalizeCallback done)
      : token_(client),
        client_(client),
        prepared_(std::move(prepared)),
        done_(std::move(done)),
        deadline_(client->DeadlineFor(prepared_->deadline())) {}

  void Start() { Send(&prepared_->proto()); }

 private:
  void Send(const normd::v1::NormalizeRequest* request) {
    context_ = std::make_unique<grpc::ClientContext>();
    context_->set_deadline(absl::ToChronoTime(deadline_));
    context_->set_wait_for_ready(client_->options_.wait_for_ready);
    response_.Clear();
    // Every member this thread reads is read before the hand-off is stated: the callback may run on
    // another gRPC thread as soon as the call starts, and it replaces context_ when it retries.
    grpc::ClientContext* const context = context_.get();
    HandingToLibrary(this);  // gRPC's hand-off to OnDone, stated for TSan (base/mutex.h)
    client_->stub_->async()->Normalize(
        context, request, &response_,
        [self = shared_from_this()](grpc::Status s) { self->OnDone(s); });
  }

  void OnDone(const grpc::Status& status) {
    TakenBackFromLibrary(this);
    if (status.error_code() == grpc::StatusCode::NOT_FOUND && prepared_->weight_ &&
        attempt_ < kLastAttempt) {
      ++attempt_;
      if (attempt_ == 1) {
        Reregister();
      } else {
        *retry_.mutable_weight() = prepared_->weight_->state_->tensor;  // clears weight_id (oneof)
        Send(&retry_);
      }
      return;
    }
    Finish(status.ok() ? ToNormalizeResult(std::move(response_))
                       : FromGrpcCall(status, *context_, client_->options_.target));
  }

  void Reregister() {
    context_ = std::make_unique<grpc::ClientContext>();
    context_->set_deadline(absl::ToChronoTime(deadline_));
    context_->set_wait_for_ready(client_->options_.wait_for_ready);
    *register_request_.mutable_weight() = prepared_->weight_->state_->tensor;
    grpc::ClientContext* const context = context_.get();  // read before the hand-off, as in Send
    HandingToLibrary(this);
    client_->stub_->async()->RegisterWeight(
        context, &register_request_, &register_response_,
        [self = shared_from_this()](grpc::Status s) { self->OnRegistered(s); });
  }

  void OnRegistered(const grpc::Status& status) {
    TakenBackFromLibrary(this);
    if (!status.ok()) {
      Finish(FromGrpcCall(status, *context_, client_->options_.target));
      return;
    }
    const std::shared_ptr<Weight::State>& weight = prepared_->weight_->state_;
    {
      normd::MutexLock lock(&weight->mu);
      weight->id = register_response_.weight_id();
    }
    retry_ = prepared_->proto();
    retry_.set_weight_id(register_response_.weight_id());
    Send(&retry_);
  }

  void Finish(absl::StatusOr<NormalizeResult> result) { done_(std::move(result)); }

  // Ends the call's count in the Client after every other member (the ClientContext holds a
  // reference to the channel) is gone: the last channel reference must never drop on a gRPC
  // callback thread, which cannot shut down the completion queue it runs on.
  struct InFlightToken {
    explicit InFlightToken(Client* c) : client(c) { client->BeginAsync(); }
    ~InFlightToken() { client->EndAsync(); }
    Client* client;
  };
  InFlightToken token_;  // first member: destroyed last
  Client* const client_;
  const std::shared_ptr<const PreparedRequest> prepared_;
  NormalizeCallback done_;
  const absl::Time deadline_;
  int attempt_ = 0;
  std::unique_ptr<grpc::ClientContext> context_;
  normd::v1::NormalizeResponse response_;
  normd::v1::NormalizeRequest retry_;
  normd::v1::RegisterWeightRequest register_request_;
  normd::v1::RegisterWeightResponse register_response_;
};

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(ClientOptions options) {
  if (options.target.empty())
    return absl::InvalidArgumentError("target: empty; expected HOST:PORT");
  if (options.default_deadline <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("default_deadline must be positive");
  }
  if (options.max_request_bytes < 0)
    return absl::InvalidArgumentError("max_request_bytes must be >= 0");
  // gRPC raises anything under 100 ms to 100 ms without a word; refusing says so instead.
  if (options.connect_timeout < absl::Milliseconds(100)) {
    return absl::InvalidArgumentError(
        absl::StrCat("connect_timeout: ", absl::FormatDuration(options.connect_timeout),
                     "; must be at least 100ms"));
  }
  int64_t limit =
      options.max_request_bytes > 0 ? options.max_request_bytes : kDefaultMaxRequestBytes;
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      MakeChannelCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  std::shared_ptr<grpc::Channel> channel = MakeNormdChannel(options, limit, *credentials);
  if (options.max_request_bytes == 0) {
    // Match the server's limit, so that an oversized request fails here, before it is sent.
    auto stub = normd::v1::Normalizer::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(
        absl::ToChronoTime(absl::Now() + std::min(options.default_deadline, absl::Seconds(5))));
    normd::v1::ServerInfo info;
    if (stub->GetServerInfo(&context, {}, &info).ok() && info.max_request_bytes() > 0 &&
        info.max_request_bytes() != limit) {
      limit = info.max_request_bytes();
      channel = MakeNormdChannel(options, limit, *credentials);
    }
  }
  return std::unique_ptr<Client>(new Client(std::move(options), std::move(channel), limit));
}

Client::Client(ClientOptions options, std::shared_ptr<grpc::Channel> channel,
               int64_t max_request_bytes)
    : options_(std::move(options)),
      channel_(std::move(channel)),
      max_request_bytes_(max_request_bytes),
      stub_(normd::v1::Normalizer::NewStub(channel_)),
      health_(grpc::health::v1::Health::NewStub(channel_)) {}

Client::~Client() {
  normd::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](int64_t* n) { return *n == 0; }, &async_in_flight_));
}

void Client::BeginAsync() {
  normd::MutexLock lock(&mu_);
  ++async_in_flight_;
}

void Client::EndAsync() {
  normd::MutexLock lock(&mu_);
  --async_in_flight_;
}

absl::Time Client::DeadlineFor(absl::Duration call_deadline) const {
  return absl::Now() +
         (call_deadline > absl::ZeroDuration() ? call_deadline : options_.default_deadline);
}

absl::StatusOr<PreparedRequest> Client::Prepare(const TensorView& input, const WeightSource& weight,
                                                const NormalizeOptions& options) const {
  PreparedRequest prepared;
  const DType wire = options.wire_dtype.value_or(input.dtype());
  if (absl::Status s = EncodeTensor(input, wire, prepared.proto_.mutable_input()); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("input: ", s.message()));
  }
  NORMD_RETURN_IF_ERROR(FillRequest(wire, weight, options, prepared));
  return prepared;
}

absl::StatusOr<PreparedRequest> Client::Prepare(const RegionTensor& input,
                                                const WeightSource& weight,
                                                const NormalizeOptions& options) const {
  if (options.wire_dtype.has_value() && *options.wire_dtype != input.dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("input: a region's tensor travels as its own dtype (", DTypeName(input.dtype),
                     "), not wire_dtype ", DTypeName(*options.wire_dtype)));
  }
  PreparedRequest prepared;
  normd::v1::Tensor* tensor = prepared.proto_.mutable_input();
  tensor->set_dtype(static_cast<normd::v1::DType>(input.dtype));
  for (int64_t d : input.shape) tensor->add_shape(d);
  *tensor->mutable_region() = input.Reference();
  NORMD_RETURN_IF_ERROR(FillRequest(input.dtype, weight, options, prepared));
  return prepared;
}

absl::Status Client::FillRequest(DType wire, const WeightSource& weight,
                                 const NormalizeOptions& options, PreparedRequest& prepared) const {
  normd::v1::NormalizeRequest& proto = prepared.proto_;
  if (weight.registered()) {
    proto.set_weight_id(weight.registered()->id());
    prepared.weight_ = weight.registered();
  } else if (absl::Status s = EncodeWeight(*weight.inline_weight(), wire, proto.mutable_weight());
             !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("weight: ", s.message()));
  }
  if (options.residual && options.residual_region) {
    return absl::InvalidArgumentError("residual: set both inline and in a region; set one");
  }
  if (options.residual) {
    if (absl::Status s = EncodeTensor(*options.residual, wire, proto.mutable_residual()); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("residual: ", s.message()));
    }
  } else if (options.residual_region) {
    normd::v1::Tensor* residual = proto.mutable_residual();
    residual->set_dtype(static_cast<normd::v1::DType>(options.residual_region->dtype));
    for (int64_t d : options.residual_region->shape) residual->add_shape(d);
    *residual->mutable_region() = options.residual_region->Reference();
  }
  if (options.output_region) *proto.mutable_output_region() = options.output_region->Reference();
  if (options.residual_out_region) {
    *proto.mutable_residual_out_region() = options.residual_out_region->Reference();
  }
  proto.set_eps(options.eps);
  proto.set_weight_offset(options.weight_offset);
  proto.set_request_id(options.request_id);
  prepared.deadline_ = options.deadline;
  const size_t bytes = proto.ByteSizeLong();
  if (static_cast<int64_t>(bytes) > max_request_bytes_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("request: ", bytes, " bytes exceeds the server's limit of ",
                     max_request_bytes_, " (--max-request-bytes); split the rows"));
  }
  return absl::OkStatus();
}

absl::StatusOr<NormalizeResult> Client::Normalize(const TensorView& input,
                                                  const WeightSource& weight,
                                                  const NormalizeOptions& options) {
  NORMD_ASSIGN_OR_RETURN(PreparedRequest prepared, Prepare(input, weight, options));
  return Normalize(prepared);
}

absl::StatusOr<NormalizeResult> Client::Normalize(const PreparedRequest& prepared) {
  const absl::Time deadline = DeadlineFor(prepared.deadline());
  const normd::v1::NormalizeRequest* request = &prepared.proto();
  normd::v1::NormalizeRequest retry;
  for (int attempt = 0;; ++attempt) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    context.set_wait_for_ready(options_.wait_for_ready);
    normd::v1::NormalizeResponse response;
    const grpc::Status status = stub_->Normalize(&context, *request, &response);
    if (status.error_code() == grpc::StatusCode::NOT_FOUND && prepared.weight_ &&
        attempt < kLastAttempt) {
      if (attempt == 0) {
        NORMD_RETURN_IF_ERROR(Reregister(*prepared.weight_, deadline));
        retry = prepared.proto();
        retry.set_weight_id(prepared.weight_->id());
      } else {
        *retry.mutable_weight() = prepared.weight_->state_->tensor;
      }
      request = &retry;
      continue;
    }
    if (!status.ok()) return FromGrpcCall(status, context, options_.target);
    return ToNormalizeResult(std::move(response));
  }
}

absl::StatusOr<NormalizeResult> Client::Normalize(const RegionTensor& input,
                                                  const WeightSource& weight,
                                                  const NormalizeOptions& options) {
  NORMD_ASSIGN_OR_RETURN(PreparedRequest prepared, Prepare(input, weight, options));
  return Normalize(prepared);
}

void Client::NormalizeAsync(const TensorView& input, const WeightSource& weight,
                            const NormalizeOptions& options, NormalizeCallback done) {
  absl::StatusOr<PreparedRequest> prepared = Prepare(input, weight, options);
  if (!prepared.ok()) {
    done(prepared.status());
    return;
  }
  NormalizeAsync(std::make_shared<const PreparedRequest>(*std::move(prepared)), std::move(done));
}

void Client::NormalizeAsync(std::shared_ptr<const PreparedRequest> request,
                            NormalizeCallback done) {
  std::make_shared<AsyncCall>(this, std::move(request), std::move(done))->Start();
}

std::future<absl::StatusOr<NormalizeResult>> Client::NormalizeFuture(
    const TensorView& input, const WeightSource& weight, const NormalizeOptions& options) {
  auto promise = std::make_shared<std::promise<absl::StatusOr<NormalizeResult>>>();
  std::future<absl::StatusOr<NormalizeResult>> future = promise->get_future();
  NormalizeAsync(input, weight, options, [promise](absl::StatusOr<NormalizeResult> r) {
    promise->set_value(std::move(r));
  });
  return future;
}

std::future<absl::StatusOr<NormalizeResult>> Client::NormalizeFuture(
    std::shared_ptr<const PreparedRequest> request) {
  auto promise = std::make_shared<std::promise<absl::StatusOr<NormalizeResult>>>();
  std::future<absl::StatusOr<NormalizeResult>> future = promise->get_future();
  NormalizeAsync(std::move(request), [promise](absl::StatusOr<NormalizeResult> r) {
    promise->set_value(std::move(r));
  });
  return future;
}

std::unique_ptr<StreamSession> Client::OpenStream() {
  return std::unique_ptr<StreamSession>(new StreamSession(this));
}

absl::StatusOr<Weight> Client::RegisterWeight(const TensorView& weight) {
  auto state = std::make_shared<Weight::State>();
  state->dtype = weight.dtype();
  state->hidden = static_cast<int64_t>(weight.count());
  if (absl::Status s = EncodeTensor(weight, weight.dtype(), &state->tensor); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("weight: ", s.message()));
  }
  Weight handle(std::move(state));
  NORMD_RETURN_IF_ERROR(Reregister(handle, DeadlineFor(absl::ZeroDuration())));
  return handle;
}

absl::Status Client::Reregister(const Weight& weight, absl::Time deadline) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline));
  context.set_wait_for_ready(options_.wait_for_ready);
  normd::v1::RegisterWeightRequest request;
  *request.mutable_weight() = weight.state_->tensor;
  normd::v1::RegisterWeightResponse response;
  NORMD_RETURN_IF_ERROR(FromGrpcStatus(stub_->RegisterWeight(&context, request, &response)));
  normd::MutexLock lock(&weight.state_->mu);
  weight.state_->id = response.weight_id();
  return absl::OkStatus();
}

absl::Status Client::OpenRegionSession() {
  normd::MutexLock lock(&region_mu_);
  if (region_session_ != nullptr && region_session_->open()) return absl::OkStatus();
  region_session_.reset();  // ended: its regions are gone with it
  NORMD_ASSIGN_OR_RETURN(region_session_,
                         RegionSession::Open(*stub_, DeadlineFor(absl::ZeroDuration())));
  return absl::OkStatus();
}

absl::StatusOr<RegisteredRegion> Client::RegisterSystemRegion(const SharedMemory& memory,
                                                              std::string label) {
  return RegisterSystemRegion(memory.name(), 0, memory.size(), std::move(label));
}

absl::StatusOr<RegisteredRegion> Client::RegisterSystemRegion(const std::string& shm_name,
                                                              int64_t offset, int64_t byte_size,
                                                              std::string label) {
  normd::v1::RegisterSystemRegionRequest request;
  request.set_shm_name(shm_name);
  request.set_offset(offset);
  request.set_byte_size(byte_size);
  request.set_label(std::move(label));
  return RegisterRegion([&](grpc::ClientContext* context, normd::v1::RegisterRegionResponse* r) {
    return stub_->RegisterSystemRegion(context, request, r);
  });
}

absl::StatusOr<RegisteredRegion> Client::RegisterCudaRegion(std::string ipc_handle,
                                                            std::string device_uuid, int64_t offset,
                                                            int64_t byte_size, std::string label) {
  normd::v1::RegisterCudaRegionRequest request;
  request.set_ipc_handle(std::move(ipc_handle));
  request.set_device_uuid(std::move(device_uuid));
  request.set_offset(offset);
  request.set_byte_size(byte_size);
  request.set_label(std::move(label));
  return RegisterRegion([&](grpc::ClientContext* context, normd::v1::RegisterRegionResponse* r) {
    return stub_->RegisterCudaRegion(context, request, r);
  });
}

absl::StatusOr<RegisteredRegion> Client::RegisterRegion(const RegisterCall& call) {
  NORMD_RETURN_IF_ERROR(OpenRegionSession());
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(DeadlineFor(absl::ZeroDuration())));
  normd::v1::RegisterRegionResponse response;
  NORMD_RETURN_IF_ERROR(FromGrpcCall(call(&context, &response), context, options_.target));
  return RegisteredRegion(this, response.region_id(), response.byte_size());
}

absl::Status Client::UnregisterRegion(const std::string& region_id) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(DeadlineFor(absl::ZeroDuration())));
  normd::v1::UnregisterRegionRequest request;
  request.set_region_id(region_id);
  normd::v1::UnregisterRegionResponse response;
  return FromGrpcCall(stub_->UnregisterRegion(&context, request, &response), context,
                      options_.target);
}

absl::StatusOr<std::vector<normd::v1::RegionInfo>> Client::ListRegions() {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(DeadlineFor(absl::ZeroDuration())));
  normd::v1::ListRegionsResponse response;
  NORMD_RETURN_IF_ERROR(
      FromGrpcCall(stub_->ListRegions(&context, {}, &response), context, options_.target));
  return std::vector<normd::v1::RegionInfo>(response.regions().begin(), response.regions().end());
}

absl::StatusOr<normd::v1::ServerInfo> Client::GetServerInfo() {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(DeadlineFor(absl::ZeroDuration())));
  normd::v1::ServerInfo info;
  NORMD_RETURN_IF_ERROR(FromGrpcStatus(stub_->GetServerInfo(&context, {}, &info)));
  return info;
}

absl::StatusOr<bool> Client::IsServing() {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(DeadlineFor(absl::ZeroDuration())));
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  NORMD_RETURN_IF_ERROR(FromGrpcStatus(health_->Check(&context, request, &response)));
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

}  // namespace normd
