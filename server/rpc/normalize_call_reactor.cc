#include "server/rpc/normalize_call_reactor.h"

#include <memory>
#include <utility>

#include "absl/time/clock.h"
#include "server/rpc/call_state.h"
#include "server/rpc/grpc_status.h"

namespace normd {

NormalizeCallReactor::NormalizeCallReactor(grpc::CallbackServerContext* context,
                                           Scheduler& scheduler, WeightRegistry& weights,
                                           const NormalizeCallOptions& options)
    : context_(context),
      scheduler_(scheduler),
      weights_(weights),
      options_(options),
      start_(absl::Now()) {
  const int64_t reservation = options_.read_reservation_bytes;
  bool granted = false;
  {
    // Held across the wait so that a grant from another thread finds its ticket recorded.
    normd::MutexLock lock(&mu_);
    waiting_ = scheduler_.memory_gate().Wait(
        reservation, start_, [this](const absl::Status& status) { OnGateDecided(status); });
    granted = waiting_ == MemoryGate::kGranted;
  }
  if (granted) {
    gate_charge_.store(reservation, std::memory_order_relaxed);
    Read();
  }
}

void NormalizeCallReactor::OnGateDecided(const absl::Status& status) {
  {
    normd::MutexLock lock(&mu_);
    waiting_ = MemoryGate::kGranted;
  }
  if (!status.ok()) {
    Answer(status);
    return;
  }
  gate_charge_.store(options_.read_reservation_bytes, std::memory_order_relaxed);
  Read();  // on a call cancelled meanwhile the read fails, and OnReadDone answers
}

void NormalizeCallReactor::OnCancel() {
  TakenBackFromLibrary(this);
  MemoryGate::Ticket ticket;
  {
    normd::MutexLock lock(&mu_);
    ticket = waiting_;
  }
  // Left the queue: nothing else will answer. Otherwise the gate has decided, and that decision's
  // read or answer ends the call.
  if (ticket != MemoryGate::kGranted && scheduler_.memory_gate().Cancel(ticket)) {
    Answer(
        absl::CancelledError("the call was cancelled (or its deadline passed) while it waited "
                             "for room under --max-memory-bytes"));
  }
}

void NormalizeCallReactor::Read() {
  HandingToLibrary(this);
  StartRead(&raw_request_);
}

void NormalizeCallReactor::OnReadDone(bool ok) {
  TakenBackFromLibrary(this);
  const bool first = !read_first_.exchange(true, std::memory_order_relaxed);
  if (first && !ok) {
    Answer(context_->IsCancelled()
               ? absl::CancelledError("the call was cancelled before its request was read")
               : absl::InvalidArgumentError(
                     "a Normalize call carries one NormalizeRequest; the client sent none"));
    return;
  }
  if (first) {
    // A unary client half-closes with its message, so this read ends at once; a second message
    // fits in the reservation, which holds room for a response as large as the first.
    HandingToLibrary(this);
    StartRead(&extra_message_);
    return;
  }
  if (ok) {
    Answer(absl::InvalidArgumentError(
        "a Normalize call carries one NormalizeRequest; the client sent more than one"));
    return;
  }
  if (context_->IsCancelled()) {
    Answer(absl::CancelledError("the call was cancelled before its request was read"));
    return;
  }
  Submit();
}

void NormalizeCallReactor::Submit() {
  const int64_t received_bytes = static_cast<int64_t>(raw_request_.Length());
  absl::Status parsed = request_.Parse(raw_request_);
  raw_request_.Clear();  // parsed: request_ shares the slices it needs
  absl::StatusOr<ValidatedRequest> validated =
      parsed.ok()
          ? ValidateReceived(request_, *context_, options_.limits, weights_, options_.regions)
          : std::move(parsed);
  if (!validated.ok()) {
    Answer(validated.status());
    return;
  }
  std::unique_ptr<WorkItem> item =
      MakeWorkItem(request_.message(), *std::move(validated), response_, *context_);
  // The reservation becomes the request's real charge, held in the gate (not by the scheduler,
  // hence memory_bytes 0) until OnDone.
  const int64_t charge = received_bytes + item->response_bytes();
  const int64_t reserved = gate_charge_.load(std::memory_order_relaxed);
  if (absl::Status resized = scheduler_.ResizeCharge(reserved, charge); !resized.ok()) {
    Answer(resized);
    return;
  }
  gate_charge_.store(charge, std::memory_order_relaxed);
  item->may_run_on_caller_thread = true;  // nothing is locked here; see Worker's shortcut
  item->hold_bytes_until_released = true;
  item->memory_bytes = 0;
  held_bytes_.store(item->admission_bytes(), std::memory_order_relaxed);
  const TensorMemory transport = item->request.transport();
  item->on_done = [this, transport](const absl::Status& status, const LaunchReport& report) {
    if (options_.metrics != nullptr) options_.metrics->RequestTransport(transport);
    if (status.ok()) raw_response_ = response_.Finish(report);
    Answer(status);
  };
  if (absl::Status admitted = scheduler_.Submit(std::move(item)); !admitted.ok()) {
    held_bytes_.store(0, std::memory_order_relaxed);  // nothing was charged
    Answer(admitted);
  }
}

void NormalizeCallReactor::Answer(const absl::Status& status) {
  if (options_.metrics != nullptr) {
    options_.metrics->RequestDone("Normalize", status, absl::Now() - start_);
  }
  HandingToLibrary(this);
  if (status.ok()) {
    StartWriteAndFinish(&raw_response_, grpc::WriteOptions(), grpc::Status::OK);
  } else {
    Finish(ToGrpcStatus(status));
  }
}

void NormalizeCallReactor::OnDone() {
  TakenBackFromLibrary(this);  // gRPC's last callback: what every thread did before Finish is seen
  const int64_t held = held_bytes_.load(std::memory_order_relaxed);
  if (held > 0) scheduler_.ReleaseHeldBytes(held, 0);
  const int64_t charge = gate_charge_.load(std::memory_order_relaxed);
  if (charge > 0) scheduler_.memory_gate().Release(charge);
  delete this;
}

}  // namespace normd
