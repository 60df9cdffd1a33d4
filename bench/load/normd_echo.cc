// normd-echo: the transport ceiling for normbench. It serves the same normd.v1.Normalizer API as
// normd but answers every Normalize with output = the input bytes (and residual_out = the residual
// bytes), with no math, no batching and no queue: what is left is gRPC, protobuf and the loopback.
// normd can never beat it; the gap between the two is normd's own overhead.
//
// Shared memory too (normbench --transport=shm|cuda-ipc): it opens region sessions and registers
// regions without mapping or opening anything, and answers a request whose output goes to a region
// with that reference alone, touching no tensor data: the ceiling of a request that carries no
// tensor bytes.
//
// It takes the flags normd's test harness passes (--listen=HOST:PORT, port 0 for any free port) and
// logs "listening on HOST:PORT" to stderr like normd, and it reports SERVING on grpc.health.v1 at
// once.
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <malloc.h>

#include <atomic>
#include <csignal>
#include <functional>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "base/command_line.h"
#include "base/mutex.h"
#include "normd/v1/normd.grpc.pb.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50052",
          "gRPC address to serve on (port 0: any free port)");
ABSL_FLAG(int64_t, max_request_bytes, int64_t{256} << 20,
          "Largest request message in bytes (as normd's)");
ABSL_FLAG(
    int64_t, hold_us, 0,
    "Diagnostic, not the ceiling: > 0 answers Normalize calls from a holder thread instead of the "
    "handler, in bursts, each burst once its oldest call has been held this long (as normd answers "
    "a launch's calls together, later, from its own threads); 0 answers in the handler");

namespace normd {
namespace {

using normd::v1::NormalizeRequest;
using normd::v1::NormalizeResponse;

int64_t Rows(const normd::v1::Tensor& t) {
  int64_t rows = 1;
  for (int i = 0; i + 1 < t.shape_size(); ++i) rows *= t.shape(i);
  return rows;
}

// An output tensor shaped like `like` and written "into" `region`: what normd answers for it.
void InRegion(const normd::v1::Tensor& like, const normd::v1::RegionReference& region,
              normd::v1::Tensor* out) {
  out->set_dtype(like.dtype());
  *out->mutable_shape() = like.shape();
  *out->mutable_region() = region;
}

// An output in the response for an input that was in a region: the same size, never read.
void SizedLike(const normd::v1::Tensor& like, normd::v1::Tensor* out) {
  out->set_dtype(like.dtype());
  *out->mutable_shape() = like.shape();
  out->mutable_data()->resize(static_cast<size_t>(like.region().byte_length()));
}

// What normd would answer, minus the math: the same sizes, so the transport cost is the same.
void Echo(const NormalizeRequest& request, NormalizeResponse* response) {
  if (request.has_output_region()) {
    InRegion(request.input(), request.output_region(), response->mutable_output());
  } else if (request.input().has_region()) {
    SizedLike(request.input(), response->mutable_output());
  } else {
    *response->mutable_output() = request.input();
  }
  if (request.has_residual_out_region()) {
    InRegion(request.residual(), request.residual_out_region(), response->mutable_residual_out());
  } else if (request.has_residual() && request.residual().has_region()) {
    SizedLike(request.residual(), response->mutable_residual_out());
  } else if (request.has_residual()) {
    *response->mutable_residual_out() = request.residual();
  }
  response->set_request_id(request.request_id());
  response->mutable_timing()->set_batch_rows(static_cast<int32_t>(Rows(request.input())));
  response->mutable_timing()->set_batch_requests(1);
}

// --hold-us: unary calls whose responses are built, answered by one thread in bursts. It isolates
// what answering later, off gRPC's handler threads and many calls at once, costs the transport by
// itself, with no math and no copies: normd's CUDA worker answers a launch's calls that way.
class Holder {
 public:
  explicit Holder(absl::Duration hold) : hold_(hold), thread_([this] { Loop(); }) {}
  ~Holder() {
    {
      normd::MutexLock lock(&mu_);
      stopping_ = true;
    }
    thread_.join();
  }
  void Hold(grpc::ServerUnaryReactor* reactor) {
    normd::MutexLock lock(&mu_);
    if (held_.empty()) oldest_ = absl::Now();
    held_.push_back(reactor);
  }

 private:
  void Loop() {
    std::vector<grpc::ServerUnaryReactor*> burst;
    while (true) {
      {
        normd::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](Holder* h) ABSL_EXCLUSIVE_LOCKS_REQUIRED(h->mu_) {
              return h->stopping_ || !h->held_.empty();
            },
            this));
        if (held_.empty()) return;  // stopping, nothing held
        mu_.AwaitWithDeadline(absl::Condition(&stopping_), oldest_ + hold_);
        burst.swap(held_);
      }
      for (grpc::ServerUnaryReactor* reactor : burst) reactor->Finish(grpc::Status::OK);
      burst.clear();
    }
  }

  const absl::Duration hold_;
  normd::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<grpc::ServerUnaryReactor*> held_ ABSL_GUARDED_BY(mu_);
  absl::Time oldest_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // last: starts after the fields it reads
};

// NormalizeStream answered one message at a time, in order.
class EchoStreamReactor final
    : public grpc::ServerBidiReactor<NormalizeRequest, NormalizeResponse> {
 public:
  EchoStreamReactor() { StartRead(&request_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    response_.Clear();
    Echo(request_, &response_);
    StartWrite(&response_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed"));
      return;
    }
    StartRead(&request_);
  }
  void OnDone() override { delete this; }

 private:
  NormalizeRequest request_;
  NormalizeResponse response_;
};

// OpenRegionSession: the one confirmation, then open until the client cancels (or shutdown).
class EchoSessionReactor final : public grpc::ServerWriteReactor<normd::v1::RegionSessionEvent> {
 public:
  explicit EchoSessionReactor(const std::string& peer) {
    event_.set_peer(peer);
    StartWrite(&event_);
  }
  void OnWriteDone(bool /*ok*/) override {}
  void OnCancel() override { Finish(grpc::Status::CANCELLED); }
  void OnDone() override { delete this; }

 private:
  normd::v1::RegionSessionEvent event_;
};

class EchoService final : public normd::v1::Normalizer::CallbackService {
 public:
  // `holder` (--hold-us) may be null: answer in the handler.
  EchoService(int64_t max_request_bytes, Holder* holder)
      : max_request_bytes_(max_request_bytes), holder_(holder) {}

  grpc::ServerUnaryReactor* Normalize(grpc::CallbackServerContext* context,
                                      const NormalizeRequest* request,
                                      NormalizeResponse* response) override {
    Echo(*request, response);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (holder_ != nullptr) {
      holder_->Hold(reactor);
    } else {
      reactor->Finish(grpc::Status::OK);
    }
    return reactor;
  }
  grpc::ServerBidiReactor<NormalizeRequest, NormalizeResponse>* NormalizeStream(
      grpc::CallbackServerContext* /*context*/) override {
    return new EchoStreamReactor();
  }
  grpc::ServerUnaryReactor* RegisterWeight(grpc::CallbackServerContext* context,
                                           const normd::v1::RegisterWeightRequest* request,
                                           normd::v1::RegisterWeightResponse* response) override {
    // Content-addressed like normd's ids, though not the same hash: echo ignores weights anyway.
    response->set_weight_id(absl::StrCat("echo-", request->weight().dtype(), "-",
                                         std::hash<std::string>()(request->weight().data())));
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  grpc::ServerWriteReactor<normd::v1::RegionSessionEvent>* OpenRegionSession(
      grpc::CallbackServerContext* context,
      const normd::v1::OpenRegionSessionRequest* /*request*/) override {
    return new EchoSessionReactor(context->peer());
  }
  // Regions are registered without being mapped: echo never reads or writes them.
  grpc::ServerUnaryReactor* RegisterSystemRegion(
      grpc::CallbackServerContext* context, const normd::v1::RegisterSystemRegionRequest* request,
      normd::v1::RegisterRegionResponse* response) override {
    return Registered(context, request->byte_size(), response);
  }
  grpc::ServerUnaryReactor* RegisterCudaRegion(
      grpc::CallbackServerContext* context, const normd::v1::RegisterCudaRegionRequest* request,
      normd::v1::RegisterRegionResponse* response) override {
    return Registered(context, request->byte_size(), response);
  }
  grpc::ServerUnaryReactor* UnregisterRegion(
      grpc::CallbackServerContext* context, const normd::v1::UnregisterRegionRequest* /*request*/,
      normd::v1::UnregisterRegionResponse* /*response*/) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* context,
                                          const normd::v1::GetServerInfoRequest* /*request*/,
                                          normd::v1::ServerInfo* response) override {
    response->set_version("echo");
    response->set_backend("echo");
    response->set_max_request_bytes(max_request_bytes_);
    response->add_shared_memory("system");
    response->add_shared_memory("cuda");
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  grpc::ServerUnaryReactor* Registered(grpc::CallbackServerContext* context, int64_t byte_size,
                                       normd::v1::RegisterRegionResponse* response) {
    response->set_region_id(absl::StrCat("echo-", next_region_.fetch_add(1)));
    response->set_byte_size(byte_size);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  const int64_t max_request_bytes_;
  Holder* const holder_;
  std::atomic<int64_t> next_region_{1};
};

int Run(int argc, char** argv) {
  // SIGINT/SIGTERM reach only the sigwait below, not a thread in the middle of a call.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  absl::SetProgramUsageMessage("normd-echo: normd.v1 with output = input (the transport ceiling).");
  const std::vector<std::string> rest = ParseCommandLineWithDashes(argc, argv);
  if (rest.size() > 1) {
    std::cerr << "normd-echo: unexpected argument '" << rest[1] << "' (see --help)\n";
    return 2;
  }
  const std::string listen = absl::GetFlag(FLAGS_listen);
  const int64_t max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  const int64_t hold_us = absl::GetFlag(FLAGS_hold_us);
  if (hold_us < 0) {
    std::cerr << "normd-echo: --hold-us = " << hold_us << " must be >= 0\n";
    return 2;
  }
  std::unique_ptr<Holder> holder;
  if (hold_us > 0) holder = std::make_unique<Holder>(absl::Microseconds(hold_us));
  EchoService service(max_request_bytes, holder.get());
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(max_request_bytes));
  builder.SetMaxSendMessageSize(-1);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::cerr << "normd-echo: could not listen on " << listen << "\n";
    return 1;
  }
  std::cerr << "normd-echo listening on " << listen.substr(0, listen.rfind(':')) << ":" << port
            << std::endl;
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  return 0;
}

}  // namespace
}  // namespace normd

int main(int argc, char** argv) {
#ifdef __GLIBC__
  // The same allocator settings as normd (server/main.cc, KeepLargeBuffersInTheAllocator), so that
  // the ceiling does not pay page faults for large messages that normd no longer pays.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
  // As in normd: the echo is the ceiling, so it runs with the same process settings.
  normd::TurnOffMutexDeadlockDetection();
  return normd::Run(argc, argv);
}
