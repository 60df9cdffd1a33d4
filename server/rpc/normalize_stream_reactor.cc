#include "server/rpc/normalize_stream_reactor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/rpc/call_state.h"
#include "server/rpc/grpc_status.h"

namespace normd {

NormalizeStreamReactor::NormalizeStreamReactor(grpc::CallbackServerContext* context,
                                               Scheduler& scheduler, WeightRegistry& weights,
                                               ValidationLimits limits, int max_inflight,
                                               int64_t read_reservation_bytes,
                                               StallWatch* stall_watch, ServerMetrics* metrics,
                                               const RegionRegistry* regions)
    : context_(context),
      scheduler_(scheduler),
      weights_(weights),
      limits_(limits),
      max_inflight_(static_cast<size_t>(std::max(max_inflight, 1))),
      read_reservation_bytes_(read_reservation_bytes),
      stall_watch_(stall_watch),
      metrics_(metrics),
      regions_(regions) {
  Pump();
}

NormalizeStreamReactor::~NormalizeStreamReactor() {
  // gRPC's last callback has run (OnDone): no read is outstanding and no wait is queued, but a
  // reservation taken for a read that never started may remain.
  int64_t unused = 0;
  {
    normd::MutexLock lock(&mu_);
    unused = std::exchange(read_reserved_, 0) + std::exchange(window_credit_, 0);
    if (reading_ != nullptr) unused += std::exchange(reading_->read_reservation, 0);
  }
  if (unused > 0) scheduler_.memory_gate().Release(unused);
}

absl::Status NormalizeStreamReactor::StreamError(const Slot& slot,
                                                 const absl::Status& status) const {
  return absl::Status(status.code(), absl::StrCat("stream message ", slot.index, " (request_id '",
                                                  slot.request_id, "'): ", status.message()));
}

void NormalizeStreamReactor::OnReadDone(bool ok) {
  TakenBackFromLibrary(this);
  Slot* admitted = nullptr;
  int64_t unused_reservation = 0;
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
      unused_reservation = slot->read_reservation;
    }
  }
  if (unused_reservation > 0) scheduler_.memory_gate().Release(unused_reservation);
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
  const int64_t reserved = std::exchange(raw->read_reservation, 0);
  absl::StatusOr<ValidatedRequest> validated =
      raw->parsed.ok() ? ValidateReceived(*raw->request, *context_, limits_, weights_, regions_)
                       : raw->parsed;
  if (!validated.ok()) {
    if (reserved > 0) scheduler_.memory_gate().Release(reserved);
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
  // and never reads holds its responses in normd's memory. Under a budget the read's reservation
  // becomes that charge, held by the slot (so not by the scheduler: memory_bytes 0); without one
  // the scheduler charges it on admission.
  const int64_t charge = raw->received_bytes + item->response_bytes();
  if (reserved > 0) {
    // gRPC grants the window for the next message while this one arrives, so the client may have
    // sent up to as much again before normd asks for it: that stays charged to the stream until
    // its next read holds a reservation (as far as this one leaves room for it).
    const int64_t credit = std::clamp(reserved - charge, int64_t{0}, raw->received_bytes);
    if (absl::Status resized = scheduler_.ResizeCharge(reserved, charge + credit); !resized.ok()) {
      scheduler_.memory_gate().Release(reserved);
      DropRequest(raw);
      CompleteSlot(raw, resized);
      return;
    }
    // Added: the next read may already have started from another thread (and its message been
    // admitted); the credits then go back together when the read after it starts.
    normd::MutexLock lock(&mu_);
    window_credit_ += credit;
  }
  item->hold_bytes_until_released = true;
  item->memory_bytes = reserved > 0 ? 0 : charge;
  raw->hold.scheduler = &scheduler_;
  raw->hold.bytes = item->admission_bytes();
  raw->hold.memory_bytes = charge;
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
    // The scheduler charged nothing; the memory charge converted from the reservation stays the
    // slot's to give back.
    raw->hold.bytes = 0;
    if (reserved == 0) raw->hold.scheduler = nullptr;
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
  std::unique_ptr<Slot> written;  // given back outside mu_ (see the header)
  StallWatch::Ticket watched = 0;
  {
    normd::MutexLock lock(&mu_);
    write_outstanding_ = false;
    watched = std::exchange(stall_ticket_, 0);
    written = std::move(slots_.front());
    slots_.pop_front();
    if (!ok && stream_status_.ok()) {
      stream_status_ = absl::CancelledError("the client stopped reading responses");
      reads_done_ = true;
    }
  }
  written.reset();
  // Taken back: its callback will not run. Not: it runs (or ran), and accounts for itself.
  if (watched != 0 && stall_watch_->Unwatch(watched)) {
    normd::MutexLock lock(&mu_);
    --stall_checks_pending_;
  }
  Pump();
  HandingToLibrary(this);  // gRPC calls OnDone only after this callback returns
}

void NormalizeStreamReactor::OnWriteStalled(uint64_t write, const StallWatch::Stall& stall) {
  bool cancel = false;
  {
    normd::MutexLock lock(&mu_);
    // The watched write, still outstanding (not a later one that started as this one completed).
    cancel = write_outstanding_ && writes_started_ == write && !finished_;
    if (cancel && stream_status_.ok()) {
      stream_status_ = absl::ResourceExhaustedError(absl::StrCat(
          "the client read no response for ", absl::FormatDuration(stall.outstanding),
          " while normd held ", slots_.size(), " responses for it",
          stall.under_pressure ? ", and memory was short (calls waited or were refused)" : "",
          "; the stream is cancelled (",
          stall.under_pressure ? "--stream-stall-timeout-under-pressure" : "--stream-stall-timeout",
          ")"));
      reads_done_ = true;
    }
  }
  // The stream cannot finish meanwhile (this check is pending): the context is still there. The
  // client is not reading, so no status could reach it; cancelling fails the outstanding write,
  // and the stream then drops its responses and gives back their memory.
  if (cancel) context_->TryCancel();
  Next next;
  {
    // Decided with the update: once this check is no longer pending the stream may finish.
    normd::MutexLock lock(&mu_);
    --stall_checks_pending_;
    next = DecideLocked();
  }
  Act(next);
}

void NormalizeStreamReactor::OnCancel() {
  TakenBackFromLibrary(this);
  bool stop_waiting = false;
  {
    normd::MutexLock lock(&mu_);
    // A read outstanding or a write ends with ok = false and takes it from there; a stream waiting
    // for room has neither, so nothing else would end it.
    if (waiting_for_room_ && !reads_done_) {
      reads_done_ = true;
      read_refusal_ = absl::CancelledError(
          "the stream was cancelled while it waited for room under --max-memory-bytes");
      stop_waiting = true;
    }
  }
  if (stop_waiting) Pump();
  HandingToLibrary(this);
}

void NormalizeStreamReactor::OnReadRoom(const absl::Status& status) {
  // Not a gRPC reaction: once waiting_for_room_ is cleared another thread may finish the stream, so
  // the decision is taken in the same critical section (as in CompleteSlot).
  Next next;
  {
    normd::MutexLock lock(&mu_);
    waiting_for_room_ = false;
    room_ticket_ = MemoryGate::kGranted;
    if (status.ok()) {
      read_reserved_ = read_reservation_bytes_;
    } else if (!reads_done_) {
      reads_done_ = true;
      read_refusal_ = absl::Status(
          status.code(),
          absl::StrCat("stream message ", next_index_, ": ", status.message(),
                       " (a stream reserves ", read_reservation_bytes_,
                       " bytes, twice --max-request-bytes, before reading a message)"));
    }
    next = DecideLocked();
  }
  Act(next);
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
  next.gate = &scheduler_.memory_gate();
  if (finished_) return next;
  // Responses in order. Once the stream has failed, the rest are computed but not sent.
  while (!write_outstanding_ && !slots_.empty() && slots_.front()->done) {
    Slot& front = *slots_.front();
    if (stream_status_.ok() && !front.status.ok()) {
      stream_status_ = StreamError(front, front.status);
      reads_done_ = true;
    }
    if (!stream_status_.ok()) {
      next.dropped.push_back(std::move(slots_.front()));
      slots_.pop_front();
      continue;
    }
    write_outstanding_ = true;
    next.write = &front.raw_response;
    ++writes_started_;
    if (stall_watch_ != nullptr) {
      // Watch never calls back inline; the callback waits for mu_.
      const uint64_t write = writes_started_;
      stall_ticket_ = stall_watch_->Watch(
          absl::Now(),
          [this, write](const StallWatch::Stall& stall) { OnWriteStalled(write, stall); });
      ++stall_checks_pending_;
    }
  }
  if (!read_outstanding_ && !reads_done_ && !waiting_for_room_ && slots_.size() < max_inflight_) {
    if (read_reservation_bytes_ > 0 && read_reserved_ == 0) {
      // Wait never calls back inline, and a grant from another thread waits for mu_.
      const MemoryGate::Ticket ticket =
          scheduler_.memory_gate().Wait(read_reservation_bytes_, absl::Now(),
                                        [this](const absl::Status& status) { OnReadRoom(status); });
      if (ticket == MemoryGate::kGranted) {
        read_reserved_ = read_reservation_bytes_;
      } else {
        waiting_for_room_ = true;
        room_ticket_ = ticket;
      }
    }
    if (read_reservation_bytes_ == 0 || read_reserved_ > 0) {
      read_outstanding_ = true;
      reading_ = std::make_unique<Slot>();
      reading_->read_reservation = std::exchange(read_reserved_, 0);
      next.release_bytes = std::exchange(window_credit_, 0);  // the reservation covers it now
      next.read = &reading_->raw_request;
    }
  }
  if (reads_done_) {
    next.release_bytes += std::exchange(read_reserved_, 0);
    if (waiting_for_room_) next.cancel_wait = room_ticket_;
  }
  // After an error the stream ends without waiting for the client's next message: a read still
  // outstanding then completes with ok = false, before gRPC calls OnDone. A wait for room must
  // end first (granted, expired or cancelled).
  if (reads_done_ && (!read_outstanding_ || !stream_status_.ok()) && !write_outstanding_ &&
      !waiting_for_room_ && stall_checks_pending_ == 0 && slots_.empty()) {
    finished_ = true;
    next.finish = true;
    next.finish_status = ToGrpcStatus(stream_status_.ok() ? read_refusal_ : stream_status_);
  }
  return next;
}

void NormalizeStreamReactor::Act(Next& next) {
  // Only what the decision keeps alive (a write, a read, a Finish, a wait left below) may touch
  // `this`: another thread, or a grant of this stream's own wait run inline by Release, may finish
  // the stream meanwhile. So memory goes back through the gate, which outlives every stream, as
  // recorded in the decision. Leaving the gate's queue comes first, so that no such grant happens
  // to a stream that is leaving it; one that left is still waiting_for_room_, so it cannot finish
  // before it decides again below.
  MemoryGate& gate = *next.gate;
  const bool left_queue = next.cancel_wait != MemoryGate::kGranted && gate.Cancel(next.cancel_wait);
  next.dropped.clear();
  if (next.release_bytes > 0) gate.Release(next.release_bytes);
  if (next.write != nullptr || next.read != nullptr || next.finish) HandingToLibrary(this);
  if (next.write != nullptr) StartWrite(next.write);
  if (next.read != nullptr) StartRead(next.read);
  if (next.finish) {
    Finish(next.finish_status);  // gRPC may now destroy the reactor: nothing follows
    return;
  }
  // Not left: the gate has granted or expired the wait, and its callback decides.
  if (left_queue) {
    Next after;
    {
      normd::MutexLock lock(&mu_);
      waiting_for_room_ = false;
      room_ticket_ = MemoryGate::kGranted;
      after = DecideLocked();
    }
    Act(after);
  }
}

}  // namespace normd
