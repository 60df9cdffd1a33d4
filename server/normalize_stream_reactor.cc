#include "server/normalize_stream_reactor.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/call_state.h"
#include "server/status_util.h"

namespace normd {

NormalizeStreamReactor::NormalizeStreamReactor(grpc::CallbackServerContext* context, Scheduler& scheduler,
                                               WeightRegistry& weights, ValidationLimits limits,
                                               int max_inflight, ServerMetrics* metrics)
    : context_(context),
      scheduler_(scheduler),
      weights_(weights),
      limits_(limits),
      max_inflight_(static_cast<size_t>(std::max(max_inflight, 1))),
      metrics_(metrics) {
  Pump();
}

absl::Status NormalizeStreamReactor::StreamError(const Slot& slot, const absl::Status& status) const {
  return absl::Status(status.code(), absl::StrCat("stream message ", slot.index, " (request_id '",
                                                  slot.request.request_id(), "'): ", status.message()));
}

void NormalizeStreamReactor::OnReadDone(bool ok) {
  std::unique_ptr<Slot> slot;
  {
    absl::MutexLock lock(&mu_);
    read_outstanding_ = false;
    slot = std::move(reading_);
    if (ok) {
      slot->index = next_index_++;
      slot->received = absl::Now();
    } else {
      reads_done_ = true;  // the client half-closed (or the call is gone)
      slot.reset();
    }
  }
  if (slot != nullptr) Admit(std::move(slot));
  Pump();
}

void NormalizeStreamReactor::Admit(std::unique_ptr<Slot> slot) {
  Slot* raw = slot.get();
  absl::StatusOr<ValidatedRequest> validated = ValidateNormalizeRequest(raw->request, limits_, weights_);
  if (!validated.ok()) {
    if (metrics_ != nullptr) metrics_->RequestDone("NormalizeStream", validated.status(), absl::Now() - raw->received);
    raw->done = true;
    raw->status = validated.status();
    absl::MutexLock lock(&mu_);
    reads_done_ = true;  // nothing after a bad message is read
    slots_.push_back(std::move(slot));
    return;
  }
  std::unique_ptr<WorkItem> item = MakeWorkItem(raw->request, *std::move(validated), raw->response, *context_);
  item->on_done = [this, raw](const absl::Status& status, const LaunchReport& report) {
    FinishResponse(status, report, raw->response);
    CompleteSlot(raw, status);
  };
  {
    // The slot joins the queue before the scheduler can complete it.
    absl::MutexLock lock(&mu_);
    slots_.push_back(std::move(slot));
  }
  if (absl::Status admitted = scheduler_.Submit(std::move(item)); !admitted.ok()) {
    CompleteSlot(raw, admitted);
  }
}

void NormalizeStreamReactor::CompleteSlot(Slot* slot, const absl::Status& status) {
  if (metrics_ != nullptr) metrics_->RequestDone("NormalizeStream", status, absl::Now() - slot->received);
  {
    absl::MutexLock lock(&mu_);
    slot->done = true;
    slot->status = status;
  }
  Pump();
}

void NormalizeStreamReactor::OnWriteDone(bool ok) {
  {
    absl::MutexLock lock(&mu_);
    write_outstanding_ = false;
    slots_.pop_front();
    if (!ok && stream_status_.ok()) {
      stream_status_ = absl::CancelledError("the client stopped reading responses");
      reads_done_ = true;
    }
  }
  Pump();
}

void NormalizeStreamReactor::Pump() {
  const normd::v1::NormalizeResponse* to_write = nullptr;
  normd::v1::NormalizeRequest* to_read = nullptr;
  bool finish = false;
  grpc::Status finish_status;
  {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
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
      to_write = &front.response;
    }
    if (!read_outstanding_ && !reads_done_ && slots_.size() < max_inflight_) {
      read_outstanding_ = true;
      reading_ = std::make_unique<Slot>();
      to_read = &reading_->request;
    }
    // After an error the stream ends without waiting for the client's next message: a read still
    // outstanding then completes with ok = false, before gRPC calls OnDone.
    if (reads_done_ && (!read_outstanding_ || !stream_status_.ok()) && !write_outstanding_ &&
        slots_.empty()) {
      finished_ = true;
      finish = true;
      finish_status = ToGrpcStatus(stream_status_);
    }
  }
  if (to_write != nullptr) StartWrite(to_write);
  if (to_read != nullptr) StartRead(to_read);
  if (finish) Finish(finish_status);
}

}  // namespace normd
