// A Normalize call, served through gRPC's callback generic API as a bidi reactor on raw bytes, so
// that normd decides when its message is read.
//
// gRPC reads a typed unary call's message whole before its handler runs, so what gRPC holds for
// calls normd has not seen yet was bounded by nothing across connections. This reactor first
// reserves room for the message and its response in the scheduler's memory gate
// (memory_gate.h), and only then asks gRPC for the message: a client waiting for room keeps its
// bytes on its side, held back by HTTP/2 flow control. Once read, the message is parsed,
// validated and submitted like a typed call's, and the reservation becomes the request's real
// charge (message as received plus response), held until gRPC is done with the call (OnDone).
//
// The wire is a unary call's: one request message and the client's half-close, then one response
// or an error status. A call that half-closes without a message, or sends a second one, is refused
// with INVALID_ARGUMENT; the request is submitted once the half-close has come.
//
// Threads: gRPC calls OnReadDone, OnCancel and OnDone; the gate grants or expires a waiting call on
// the thread that released memory (or on its timer's); a worker completes the request. mu_ orders
// the wait in the gate against cancellation; every other step follows from the one before it.
#ifndef NORMD_SERVER_RPC_NORMALIZE_CALL_REACTOR_H_
#define NORMD_SERVER_RPC_NORMALIZE_CALL_REACTOR_H_

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "server/observability/metrics.h"
#include "server/regions/region_registry.h"
#include "server/rpc/request_validation.h"
#include "server/rpc/request_wire.h"
#include "server/rpc/response_wire.h"
#include "server/rpc/weight_registry.h"
#include "server/scheduling/memory_gate.h"
#include "server/scheduling/scheduler.h"

namespace normd {

struct NormalizeCallOptions {
  ValidationLimits limits;
  // What a call reserves in the memory gate before its message is read: the most its message and
  // response can take (their size is known only once the message is read).
  int64_t read_reservation_bytes = 0;
  const RegionRegistry* regions = nullptr;  // null when shared memory is off
  ServerMetrics* metrics = nullptr;         // may be null
};

class NormalizeCallReactor final : public grpc::ServerGenericBidiReactor {
 public:
  // Borrows everything; the scheduler, the registries and the metrics must outlive the call.
  // Deletes itself in OnDone.
  NormalizeCallReactor(grpc::CallbackServerContext* context, Scheduler& scheduler,
                       WeightRegistry& weights, const NormalizeCallOptions& options);

  void OnReadDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  // The gate granted the reservation (OK) or gave up waiting (the error to answer).
  void OnGateDecided(const absl::Status& status);
  void Read();
  void Submit();
  void Answer(const absl::Status& status);

  grpc::CallbackServerContext* const context_;
  Scheduler& scheduler_;
  WeightRegistry& weights_;
  const NormalizeCallOptions& options_;
  const absl::Time start_;

  normd::Mutex mu_;
  MemoryGate::Ticket waiting_ ABSL_GUARDED_BY(mu_) = MemoryGate::kGranted;  // while in the gate

  // Set before gRPC or a worker can call back (each step happens before the next one starts);
  // atomics because ThreadSanitizer does not see gRPC's ordering of its own callbacks.
  std::atomic<int64_t> gate_charge_{0};  // held in the memory gate, released in OnDone
  std::atomic<int64_t> held_bytes_{0};   // the scheduler's admission bytes, released in OnDone

  std::atomic<bool> read_first_{false};  // the first read has completed
  grpc::ByteBuffer raw_request_;
  grpc::ByteBuffer extra_message_;  // a second message, which a unary call must not have
  RequestWire request_;
  ResponseWire response_;
  grpc::ByteBuffer raw_response_;
};

}  // namespace normd

#endif  // NORMD_SERVER_RPC_NORMALIZE_CALL_REACTOR_H_
