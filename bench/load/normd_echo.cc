// normd-echo: the transport ceiling for normbench. It serves the same normd.v1.Normalizer API as normd
// but answers every Normalize with output = the input bytes (and residual_out = the residual bytes),
// with no math, no batching and no queue: what is left is gRPC, protobuf and the loopback. normd can
// never beat it; the gap between the two is normd's own overhead.
//
// It takes the flags normd's test harness passes (--listen=HOST:PORT, port 0 for any free port) and logs
// "listening on HOST:PORT" to stderr like normd, and it reports SERVING on grpc.health.v1 at once.
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <malloc.h>

#include <csignal>
#include <functional>
#include <iostream>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "base/command_line.h"
#include "base/mutex.h"
#include "normd/v1/normd.grpc.pb.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50052", "gRPC address to serve on (port 0: any free port)");
ABSL_FLAG(int64_t, max_request_bytes, int64_t{256} << 20, "Largest request message in bytes (as normd's)");

namespace normd {
namespace {

using normd::v1::NormalizeRequest;
using normd::v1::NormalizeResponse;

int64_t Rows(const normd::v1::Tensor& t) {
  int64_t rows = 1;
  for (int i = 0; i + 1 < t.shape_size(); ++i) rows *= t.shape(i);
  return rows;
}

// What normd would answer, minus the math: the same sizes, so the transport cost is the same.
void Echo(const NormalizeRequest& request, NormalizeResponse* response) {
  *response->mutable_output() = request.input();
  if (request.has_residual()) *response->mutable_residual_out() = request.residual();
  response->set_request_id(request.request_id());
  response->mutable_timing()->set_batch_rows(static_cast<int32_t>(Rows(request.input())));
  response->mutable_timing()->set_batch_requests(1);
}

// NormalizeStream answered one message at a time, in order.
class EchoStreamReactor final : public grpc::ServerBidiReactor<NormalizeRequest, NormalizeResponse> {
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

class EchoService final : public normd::v1::Normalizer::CallbackService {
 public:
  explicit EchoService(int64_t max_request_bytes) : max_request_bytes_(max_request_bytes) {}

  grpc::ServerUnaryReactor* Normalize(grpc::CallbackServerContext* context, const NormalizeRequest* request,
                                      NormalizeResponse* response) override {
    Echo(*request, response);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
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
  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* context,
                                          const normd::v1::GetServerInfoRequest* /*request*/,
                                          normd::v1::ServerInfo* response) override {
    response->set_version("echo");
    response->set_backend("echo");
    response->set_max_request_bytes(max_request_bytes_);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  const int64_t max_request_bytes_;
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
  EchoService service(max_request_bytes);
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
  std::cerr << "normd-echo listening on " << listen.substr(0, listen.rfind(':')) << ":" << port << std::endl;
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  return 0;
}

}  // namespace
}  // namespace normd

int main(int argc, char** argv) {
#ifdef __GLIBC__
  // The same allocator settings as normd (server/main.cc, KeepLargeBuffersInTheAllocator), so that the
  // ceiling does not pay page faults for large messages that normd no longer pays.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
  // As in normd: the echo is the ceiling, so it runs with the same process settings.
  normd::TurnOffMutexDeadlockDetection();
  return normd::Run(argc, argv);
}
