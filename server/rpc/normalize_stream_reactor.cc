#include "server/rpc/normalize_stream_reactor.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/rpc/call_state.h"
#include "server/rpc/grpc_status.h"

namespace normd {

NormalizeStreamReactor::NormalizeStreamReactor(grpc::CallbackServerContext* context,
                                               Scheduler& scheduler, WeightRegistry& weights,
                                               ValidationLimits limits, int max_inflight,
                                               ServerMetrics* metrics,
                                               const RegionRegistry* regions)
    : context_(context),
      scheduler_(scheduler),
      weights_(weights),
      limits_(limits),
      max_inflight_(static_cast<size_t>(std::max(max_inflight, 1))),
      metrics_(metrics),
      regions_(regions) {
  Pump();
}

absl::Status NormalizeStreamReactor::StreamError(const Slot& slot,
                                                 const absl::Status& status) const {
  return absl::Status(status.code(), absl::StrCat("stream message ", slot.index, " (request_id '",
                                                  slot.request_id, "'): ", status.message()));
}

void NormalizeStreamReactor::OnReadDone(bool ok) {
  TakenBackFromLibrary(this);
  Slot* admitted = nullptr;
  {
    normd::MutexLock lock(&mu_);
    read_outstanding_ = false;
    std::unique_ptr<Slot> slot = std::move(reading_);
    // Once the stream has failed it may already have finished with this read outstanding, and the
    // read can still complete with a message: admitting it would submit work for a call gRPC is
    // about to destroy (its context then read by the worker). Nothing is read after the stream has
    // failed.
    if (ok && !reads_done_) {
      slot->index = next_index_++;
      slot->received = absl::Now();
      // The slot joins the queue before the lock is released: a stream with an unanswered slot
      // cannot finish, whatever another thread (a failed write, say) decides meanwhile.
      admitted = slot.get();
      slots_.push_back(std::move(slot));
    } else {
      reads_done_ = true;  // the client half-closed (or the call is gone, or the stream failed)
    }
  }
  if (admitted != nullptr) {
    admitted->received_bytes = static_cast<int64_t>(admitted->raw_request.Length());
    admitted->parsed = admitted->request->Parse(admitted->raw_request);
    admitted->raw_request.Clear();  // parsed: `request` shares the slices it needs
    admitted->request_id = admitted->request->message().request_id();
    Admit(admitted);
  }
  Pump();
  HandingToLibrary(this);  // gRPC calls OnDone only after this callback returns
}

void NormalizeStreamReactor::Admit(Slot* raw) {
  absl::StatusOr<ValidatedRequest> validated =
      raw->parsed.ok() ? ValidateReceived(*raw->request, *context_, limits_, weights_, regions_)
                       : raw->parsed;
  if (!validated.ok()) {
    if (metrics_ != nullptr)
      metrics_->RequestDone("NormalizeStream", validated.status(), absl::Now() - raw->received);
    DropRequest(raw);
    normd::MutexLock lock(&mu_);
    raw->done = true;
    raw->status = validated.status();
    reads_done_ = true;  // nothing after a bad message is read
    return;
  }
  std::unique_ptr<WorkItem> item =
      MakeWorkItem(raw->request->message(), *std::move(validated), *raw->response, *context_);
  // The message is charged until the request is computed (DropRequest frees it then), the
  // response until it has been written (the slot goes), like a unary call's: a client that sends
  // and never reads holds its responses in normd's memory.
  item->hold_bytes_until_released = true;
  item->memory_bytes = raw->received_bytes + item->response_bytes();
  raw->hold.scheduler = &scheduler_;
  raw->hold.bytes = item->admission_bytes();
  raw->hold.memory_bytes = item->memory_bytes;
  raw->hold.message_bytes = raw->received_bytes;
  const TensorMemory transport = item->request.transport();
  item->on_done = [this, raw, transport](const absl::Status& status, const LaunchReport& report) {
    if (metrics_ != nullptr) metrics_->RequestTransport(transport);
    // Encoded here, on the worker's thread and outside mu_ (a few bytes: the outputs are
    // referenced).
    if (status.ok()) raw->raw_response = raw->response->Finish(report);
    DropRequest(raw);
    CompleteSlot(raw, status);
  };
  if (absl::Status admitted = scheduler_.Submit(std::move(item)); !admitted.ok()) {
    raw->hold.scheduler = nullptr;  // nothing was charged
    DropRequest(raw);
    CompleteSlot(raw, admitted);
  }
}

void NormalizeStreamReactor::CompleteSlot(Slot* slot, const absl::Status& status) {
  if (metrics_ != nullptr)
    metrics_->RequestDone("NormalizeStream", status, absl::Now() - slot->received);
  // Marking the slot done and deciding what follows happen under one lock: once it is released,
  // another thread may finish the stream and gRPC may delete this reactor, so `this` is not touched
  // again unless the decision taken here (a write, a read, or Finish) keeps the reactor alive for
  // it.
  Next next;
  {
    normd::MutexLock lock(&mu_);
    slot->done = true;
    slot->status = status;
    next = DecideLocked();
  }
  Act(next);
}

void NormalizeStreamReactor::DropRequest(Slot* slot) {
  // The slot is not done yet: no other thread touches these (DecideLocked looks at done slots).
  slot->request.reset();
  slot->response.reset();
  slot->hold.ReleaseMessageMemory();
}

void NormalizeStreamReactor::OnWriteDone(bool ok) {
  TakenBackFromLibrary(this);
  {
    normd::MutexLock lock(&mu_);
    write_outstanding_ = false;
    slots_.pop_front();
    if (!ok && stream_status_.ok()) {
      stream_status_ = absl::CancelledError("the client stopped reading responses");
      reads_done_ = true;
    }
  }
  Pump();
  HandingToLibrary(this);  // gRPC calls OnDone only after this callback returns
}

void NormalizeStreamReactor::Pump() {
  Next next;
  {
    normd::MutexLock lock(&mu_);
    next = DecideLocked();
  }
  Act(next);
}

NormalizeStreamReactor::Next NormalizeStreamReactor::DecideLocked() {
  Next next;
  if (finished_) return next;
  // Responses in order. Once the stream has failed, the rest are computed but not sent.
  while (!write_outstanding_ && !slots_.empty() && slots_.front()->done) {
    Slot& front = *slots_.front();
    if (stream_status_.ok() && !front.status.ok()) {
      stream_status_ = StreamError(front, front.status);
      reads_done_ = true;
    }
    if (!stream_status_.ok()) {
      slots_.pop_front();
      continue;
    }
    write_outstanding_ = true;
    next.write = &front.raw_response;
  }
  if (!read_outstanding_ && !reads_done_ && slots_.size() < max_inflight_) {
    read_outstanding_ = true;
    reading_ = std::make_unique<Slot>();
    next.read = &reading_->raw_request;
  }
  // After an error the stream ends without waiting for the client's next message: a read still
  // outstanding then completes with ok = false, before gRPC calls OnDone.
  if (reads_done_ && (!read_outstanding_ || !stream_status_.ok()) && !write_outstanding_ &&
      slots_.empty()) {
    finished_ = true;
    next.finish = true;
    next.finish_status = ToGrpcStatus(stream_status_);
  }
  return next;
}

void NormalizeStreamReactor::Act(const Next& next) {
  if (next.write != nullptr || next.read != nullptr || next.finish) HandingToLibrary(this);
  if (next.write != nullptr) StartWrite(next.write);
  if (next.read != nullptr) StartRead(next.read);
  if (next.finish) Finish(next.finish_status);
}

}  // namespace normd
