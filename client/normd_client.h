// normd::Client: the C++ client library of normd (RMSNorm offload over gRPC). Include this header
// only.
//
//   auto client = normd::Client::Connect({.target = "dns:///normd:50051"});
//   std::vector<uint16_t> x = ...;                              // [rows, hidden] bf16 bits
//   normd::Weight w = (*client)->RegisterWeight(normd::TensorView::Float32(gamma)).value();
//   auto y = (*client)->Normalize(normd::TensorView::BFloat16(x, {rows, hidden}), w, {.eps =
//   1e-6f});
//   // y->output.bits(): the normalized bf16 bits; y->timing: how the server batched it.
//
// Call styles: blocking (Normalize), callback (NormalizeAsync), std::future (NormalizeFuture), and
// a StreamSession (OpenStream) that pipelines many requests over one gRPC stream for high request
// rates. Each takes the caller's data as a TensorView (or an already PreparedRequest) and marshals
// it with no copy beyond the one into the protobuf message.
//
// Failures come back as absl::Status with gRPC's code: INVALID_ARGUMENT (a bad tensor, with the
// server's message naming the field), RESOURCE_EXHAUSTED (over the size limit, or the server is
// overloaded), DEADLINE_EXCEEDED, UNAVAILABLE (after the channel's retries ran out). NOT_FOUND for
// a registered weight never reaches the caller: the client registers the weight again and retries
// once (then sends it inline, should a load balancer send the retry to yet another replica). A
// failed call's status names the server it was sent to (PeerOf below), so a caller of several
// replicas can tell which failed.
//
// Threads: a Client is thread-safe. Callbacks run on gRPC's threads; keep them short. The Client
// must outlive its StreamSessions; its destructor waits for asynchronous calls still in flight.
#ifndef NORMD_CLIENT_NORMD_CLIENT_H_
#define NORMD_CLIENT_NORMD_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "client/channel.h"
#include "client/region.h"
#include "client/region_session.h"
#include "client/request.h"
#include "client/shared_memory.h"
#include "client/stream_session.h"
#include "client/tensor.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "normd/v1/normd.grpc.pb.h"

namespace normd {

// The address of the server a failed call was sent to, as gRPC names it ("ipv4:127.0.0.1:50051"),
// or "" when the call never reached a connection (or the status did not come from a call).
std::string PeerOf(const absl::Status& status);

class Client {
 public:
  // Builds the channel (see ClientOptions). Does not fail because the server is down: the channel
  // connects lazily and reconnects; only a malformed option is an error.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Marshals a request. `input` is [..., hidden]; the weight is [hidden].
  absl::StatusOr<PreparedRequest> Prepare(const TensorView& input, const WeightSource& weight,
                                          const NormalizeOptions& options = {}) const;
  // The same with the input in a region (it travels in its own dtype: options.wire_dtype, when
  // set, must be that dtype).
  absl::StatusOr<PreparedRequest> Prepare(const RegionTensor& input, const WeightSource& weight,
                                          const NormalizeOptions& options = {}) const;

  // Blocking.
  absl::StatusOr<NormalizeResult> Normalize(const TensorView& input, const WeightSource& weight,
                                            const NormalizeOptions& options = {});
  absl::StatusOr<NormalizeResult> Normalize(const PreparedRequest& request);
  absl::StatusOr<NormalizeResult> Normalize(const RegionTensor& input, const WeightSource& weight,
                                            const NormalizeOptions& options = {});

  // Asynchronous: `done` runs once, on a gRPC thread (or on this thread, when marshalling fails).
  // The caller's buffers may be released as soon as the call returns.
  void NormalizeAsync(const TensorView& input, const WeightSource& weight,
                      const NormalizeOptions& options, NormalizeCallback done);
  void NormalizeAsync(std::shared_ptr<const PreparedRequest> request, NormalizeCallback done);
  std::future<absl::StatusOr<NormalizeResult>> NormalizeFuture(
      const TensorView& input, const WeightSource& weight, const NormalizeOptions& options = {});
  std::future<absl::StatusOr<NormalizeResult>> NormalizeFuture(
      std::shared_ptr<const PreparedRequest> request);

  // A pipelined stream; see stream_session.h.
  std::unique_ptr<StreamSession> OpenStream();

  // Registers `weight` ([hidden]) and returns its handle. The handle keeps a copy of the weight.
  absl::StatusOr<Weight> RegisterWeight(const TensorView& weight);

  // Shared memory (docs/SHARED_MEMORY.md), with a normd on this host started with
  // --shared-memory, reached through one address (its Unix socket, "unix:PATH", or loopback):
  // regions belong to the connection that registers them. The first registration opens the
  // connection's region session, which the Client holds while it lives; if that connection
  // closes, normd releases its regions and they must be registered again. The Client must outlive
  // its RegisteredRegions.
  absl::Status OpenRegionSession();
  // A region over all of `memory`, or byte_size bytes at `offset` of the object `shm_name`.
  absl::StatusOr<RegisteredRegion> RegisterSystemRegion(const SharedMemory& memory,
                                                        std::string label = "");
  absl::StatusOr<RegisteredRegion> RegisterSystemRegion(const std::string& shm_name, int64_t offset,
                                                        int64_t byte_size, std::string label = "");
  // byte_size bytes at `offset` of the GPU allocation exported as `ipc_handle`
  // (cudaIpcMemHandle_t's 64 bytes) on the GPU whose UUID is `device_uuid` (16 bytes).
  absl::StatusOr<RegisteredRegion> RegisterCudaRegion(std::string ipc_handle,
                                                      std::string device_uuid, int64_t offset,
                                                      int64_t byte_size, std::string label = "");
  absl::Status UnregisterRegion(const std::string& region_id);
  // This connection's regions, as normd holds them.
  absl::StatusOr<std::vector<normd::v1::RegionInfo>> ListRegions();

  absl::StatusOr<normd::v1::ServerInfo> GetServerInfo();
  // grpc.health.v1 Check(""): true for SERVING, false for NOT_SERVING (starting up or draining).
  absl::StatusOr<bool> IsServing();

  int64_t max_request_bytes() const { return max_request_bytes_; }
  const ClientOptions& options() const { return options_; }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

 private:
  friend class StreamSession;
  class AsyncCall;

  Client(ClientOptions options, std::shared_ptr<grpc::Channel> channel, int64_t max_request_bytes);
  absl::Time DeadlineFor(absl::Duration call_deadline) const;
  // A region registration: opens the session if needed, makes `call` with the client's deadline.
  using RegisterCall =
      std::function<grpc::Status(grpc::ClientContext*, normd::v1::RegisterRegionResponse*)>;
  absl::StatusOr<RegisteredRegion> RegisterRegion(const RegisterCall& call);
  // Everything of a request but its input: weight, residual, regions, scalars; and the size check.
  absl::Status FillRequest(DType wire, const WeightSource& weight, const NormalizeOptions& options,
                           PreparedRequest& prepared) const;
  // Registers the weight's bytes again and records the id the server gave.
  absl::Status Reregister(const Weight& weight, absl::Time deadline);
  void BeginAsync();
  void EndAsync();

  const ClientOptions options_;
  const std::shared_ptr<grpc::Channel> channel_;
  const int64_t max_request_bytes_;
  const std::unique_ptr<normd::v1::Normalizer::Stub> stub_;
  const std::unique_ptr<grpc::health::v1::Health::Stub> health_;

  normd::Mutex mu_;
  int64_t async_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  // The connection's region session, opened by the first registration; reopened if it ended.
  normd::Mutex region_mu_;
  std::unique_ptr<RegionSession> region_session_ ABSL_GUARDED_BY(region_mu_);
};

}  // namespace normd

#endif  // NORMD_CLIENT_NORMD_CLIENT_H_
