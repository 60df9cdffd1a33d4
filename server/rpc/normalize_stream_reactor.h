// NormalizeStream: a bidirectional stream whose responses come back in request order.
//
// The reactor keeps reading while earlier requests compute (up to `max_inflight` requests ahead of
// their responses: the flow-control bound on what one stream can make the server hold), and writes
// each response as soon as it and every response before it are ready. A bad message (or a failed
// request) ends the stream with its status, naming the message's index and request_id, after the
// responses to the messages before it. Messages travel as raw bytes (see NormalizerServiceBase):
// the reactor parses each request, so that bytes that are not a NormalizeRequest end the stream
// with INVALID_ARGUMENT instead of passing for the client's half-close, and takes each response's
// bytes (ResponseWire) once it is computed.
//
// Under --max-memory-bytes (`read_reservation_bytes` > 0) the stream reserves room in the memory
// gate before each read, as a Normalize call does (normalize_call_reactor.h): gRPC takes in a
// message as large as the client sends once normd asks for it, so a read outstanding on each of n
// streams could otherwise make gRPC hold n messages outside the budget. A stream waiting for room
// keeps its client's bytes on the client's side (HTTP/2 flow control); once read, the reservation
// becomes the request's charge (message plus response). A stream that waits longer than the gate
// allows ends with RESOURCE_EXHAUSTED, after the responses to its earlier messages. With a stall
// watch (stall_watch.h), a response write still outstanding after the watch's timeout, or its
// shorter one while memory is short (the client has stopped reading), cancels the stream, which
// gives back the memory its unsent responses hold.
//
// Threads: gRPC calls OnReadDone/OnWriteDone/OnCancel, workers complete requests, and the memory
// gate grants room, from any thread. All state is guarded by mu_. Memory is never given back to
// the gate under mu_: that can grant another stream's wait, whose callback takes that stream's
// lock. gRPC calls (StartRead, StartWrite, Finish) are made outside the lock,
// and only after the decision to make them was recorded under it (a flag set, a slot kept), so that
// Finish, which lets gRPC destroy the reactor, can only happen once nothing else will touch it.
#ifndef NORMD_SERVER_RPC_NORMALIZE_STREAM_REACTOR_H_
#define NORMD_SERVER_RPC_NORMALIZE_STREAM_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "base/mutex.h"
#include "normd/v1/normd.pb.h"
#include "server/observability/metrics.h"
#include "server/regions/region_registry.h"
#include "server/rpc/request_validation.h"
#include "server/rpc/request_wire.h"
#include "server/rpc/response_wire.h"
#include "server/rpc/stall_watch.h"
#include "server/rpc/weight_registry.h"
#include "server/scheduling/memory_gate.h"
#include "server/scheduling/scheduler.h"

namespace normd {

class NormalizeStreamReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  // `read_reservation_bytes`: what the stream reserves in the scheduler's memory gate before each
  // read; 0 reads without a reservation (no budget). `stall_watch`: where response writes are
  // watched for stalls; null watches none. Both must outlive the stream.
  NormalizeStreamReactor(grpc::CallbackServerContext* context, Scheduler& scheduler,
                         WeightRegistry& weights, ValidationLimits limits, int max_inflight,
                         int64_t read_reservation_bytes, StallWatch* stall_watch,
                         ServerMetrics* metrics, const RegionRegistry* regions = nullptr);
  ~NormalizeStreamReactor() override;

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override {
    TakenBackFromLibrary(
        this);  // gRPC's last callback: what every thread did before Finish is visible
    delete this;
  }

 private:
  // An admitted request's charge against the scheduler's budgets. Its message's share of the
  // memory charge is given back as soon as the request is computed (ReleaseMessageMemory): the
  // slot then no longer holds the message. The rest (its response's memory, and its payload's
  // queue bytes) is released when the slot goes, once the response has been written (or dropped
  // with the stream): a client that does not read keeps its responses, and only them, here.
  struct Hold {
    Hold() = default;
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold() {
      if (scheduler != nullptr) scheduler->ReleaseHeldBytes(bytes, memory_bytes);
    }
    void ReleaseMessageMemory() {
      if (scheduler == nullptr || message_bytes == 0) return;
      scheduler->ReleaseHeldBytes(0, message_bytes);
      memory_bytes -= message_bytes;
      message_bytes = 0;
    }
    Scheduler* scheduler = nullptr;  // null: nothing charged
    int64_t bytes = 0;
    int64_t memory_bytes = 0;   // still charged, message_bytes included
    int64_t message_bytes = 0;  // the request message's part of memory_bytes, until released
  };

  // One request of the stream and, once computed, its response. The request and the response
  // live on the heap so that both can be freed (DropRequest) as soon as they are no longer
  // needed: a received message pins the gRPC read buffers its slices are in, often several times
  // its own size, and a stalled stream would otherwise keep them for every slot it holds.
  struct Slot {
    Hold hold;  // first, so destroyed last: released once the buffers below are freed
    int64_t index = 0;
    absl::Time received;
    int64_t received_bytes = 0;    // the message's size as read
    int64_t read_reservation = 0;  // held in the gate for this read, until Admit converts it
    std::string request_id;        // kept for StreamError once `request` is gone
    grpc::ByteBuffer raw_request;  // as read; parsed into `request`
    absl::Status parsed;           // why raw_request is not a NormalizeRequest, if it is not
    // Parsed, holding the received slices its tensors' data is in; null once DropRequest ran.
    std::unique_ptr<RequestWire> request = std::make_unique<RequestWire>();
    // The outputs, written by the worker; null once DropRequest ran.
    std::unique_ptr<ResponseWire> response = std::make_unique<ResponseWire>();
    grpc::ByteBuffer raw_response;  // the response's bytes, once computed
    bool done = false;
    absl::Status status;
  };

  // What to do next, decided under mu_ and done outside it.
  struct Next {
    const grpc::ByteBuffer* write = nullptr;
    grpc::ByteBuffer* read = nullptr;
    bool finish = false;
    grpc::Status finish_status;
    // Given back to the gate outside mu_, before a Finish: slots of a failed stream, and a read
    // reservation no read will use.
    std::vector<std::unique_ptr<Slot>> dropped;
    int64_t release_bytes = 0;
    MemoryGate::Ticket cancel_wait = MemoryGate::kGranted;  // a wait in the gate to leave
    MemoryGate* gate = nullptr;  // the scheduler's, read while the stream was surely alive
  };

  // Decides under the lock what to do next (write, read, finish) and does it outside the lock.
  // Call only where gRPC keeps the reactor alive (its reactions, the constructor); a worker's
  // thread must decide in the same critical section as its own update (CompleteSlot).
  void Pump();
  Next DecideLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Act(Next& next);
  // The gate granted the room a read waits for (OK) or gave up waiting (the error).
  void OnReadRoom(const absl::Status& status);
  // The stall watch found write number `write` still outstanding past a deadline.
  void OnWriteStalled(uint64_t write, const StallWatch::Stall& stall);
  void Admit(Slot* slot);  // a slot already in slots_, not yet done
  void CompleteSlot(Slot* slot, const absl::Status& status);
  // Frees the slot's request and response objects and gives back its message's memory charge:
  // once its response is encoded (or the request refused), only raw_response is needed.
  static void DropRequest(Slot* slot);
  absl::Status StreamError(const Slot& slot, const absl::Status& status) const;

  grpc::CallbackServerContext* const context_;
  Scheduler& scheduler_;
  WeightRegistry& weights_;
  const ValidationLimits limits_;
  const size_t max_inflight_;
  const int64_t read_reservation_bytes_;  // 0: reads reserve nothing
  StallWatch* const stall_watch_;         // null: writes are not watched
  ServerMetrics* const metrics_;          // may be null
  const RegionRegistry* const regions_;   // null when shared memory is off

  normd::Mutex mu_;
  std::deque<std::unique_ptr<Slot>> slots_ ABSL_GUARDED_BY(mu_);  // front: next response to write
  std::unique_ptr<Slot> reading_ ABSL_GUARDED_BY(mu_);            // target of the outstanding read
  int64_t next_index_ ABSL_GUARDED_BY(mu_) = 0;
  bool read_outstanding_ ABSL_GUARDED_BY(mu_) = false;
  bool write_outstanding_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) =
      false;  // half-closed by the client, or stopped by an error
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status stream_status_ ABSL_GUARDED_BY(mu_);  // the first error: how the stream ends
  // Room for the next read: held (bytes), or waited for in the gate (the ticket). While the stream
  // waits it does not finish: the gate's callback will touch it.
  int64_t read_reserved_ ABSL_GUARDED_BY(mu_) = 0;
  bool waiting_for_room_ ABSL_GUARDED_BY(mu_) = false;
  // What the client may have sent of its next message before normd asks for it (the window gRPC
  // granted while the last message arrived), charged until the next read's reservation covers it
  // or the stream goes.
  int64_t window_credit_ ABSL_GUARDED_BY(mu_) = 0;
  MemoryGate::Ticket room_ticket_ ABSL_GUARDED_BY(mu_) = MemoryGate::kGranted;
  // The outstanding write's watch (0: none), the writes started so far (the watched write's
  // number), and the watches not yet taken back or run: the stream does not finish while a stall
  // callback may still touch it.
  StallWatch::Ticket stall_ticket_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t writes_started_ ABSL_GUARDED_BY(mu_) = 0;
  int stall_checks_pending_ ABSL_GUARDED_BY(mu_) = 0;
  // Why reads stopped without a message failing (the wait for room ran out, or the call was
  // cancelled while waiting): how the stream ends once every earlier response is written.
  absl::Status read_refusal_ ABSL_GUARDED_BY(mu_);
};

}  // namespace normd

#endif  // NORMD_SERVER_RPC_NORMALIZE_STREAM_REACTOR_H_
