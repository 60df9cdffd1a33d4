#include "server/scheduling/memory_gate.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace normd {

MemoryGate::MemoryGate(int64_t limit_bytes, absl::Duration max_wait)
    : limit_bytes_(limit_bytes), max_wait_(max_wait) {}

bool MemoryGate::FitsLocked(int64_t bytes) const {
  return limit_bytes_ <= 0 || charged_ == 0 || charged_ + bytes <= limit_bytes_;
}

absl::Status MemoryGate::NoRoom(int64_t bytes) const {
  return absl::ResourceExhaustedError(
      absl::StrCat("normd is overloaded: requests in flight hold ", charged_,
                   " bytes, and this one's ", bytes, " (request and response) would pass the ",
                   limit_bytes_, " bytes --max-memory-bytes leaves them; retry later"));
}

MemoryGate::Ticket MemoryGate::Wait(int64_t bytes, absl::Time now, OnReady on_ready) {
  normd::MutexLock lock(&mu_);
  if (queue_.empty() && FitsLocked(bytes)) {
    charged_ += bytes;
    return kGranted;
  }
  const Ticket ticket = next_ticket_++;
  queue_.push_back(Waiter{ticket, bytes, now, std::move(on_ready)});
  return ticket;
}

bool MemoryGate::Cancel(Ticket ticket) {
  std::list<Waiter> granted;
  bool removed = false;
  {
    normd::MutexLock lock(&mu_);
    for (auto it = queue_.begin(); it != queue_.end(); ++it) {
      if (it->ticket != ticket) continue;
      queue_.erase(it);
      removed = true;
      break;
    }
    // The waiter that left may have been the one holding back smaller ones behind it.
    if (removed) GrantLocked(granted);
  }
  for (Waiter& w : granted) w.on_ready(absl::OkStatus());
  return removed;
}

absl::Status MemoryGate::Resize(int64_t from, int64_t to) {
  if (to <= from) {
    Release(from - to);
    return absl::OkStatus();
  }
  normd::MutexLock lock(&mu_);
  const int64_t others = charged_ - from;
  if (limit_bytes_ > 0 && others > 0 && others + to > limit_bytes_) return NoRoom(to);
  charged_ += to - from;
  return absl::OkStatus();
}

absl::Status MemoryGate::TryCharge(int64_t bytes) {
  normd::MutexLock lock(&mu_);
  if (!queue_.empty() || !FitsLocked(bytes)) return NoRoom(bytes);
  charged_ += bytes;
  return absl::OkStatus();
}

void MemoryGate::Release(int64_t bytes) {
  std::list<Waiter> granted;
  {
    normd::MutexLock lock(&mu_);
    charged_ -= bytes;
    GrantLocked(granted);
  }
  for (Waiter& w : granted) w.on_ready(absl::OkStatus());
}

void MemoryGate::GrantLocked(std::list<Waiter>& granted) {
  while (!queue_.empty() && FitsLocked(queue_.front().bytes)) {
    charged_ += queue_.front().bytes;
    granted.splice(granted.end(), queue_, queue_.begin());
  }
}

void MemoryGate::ExpireDue(absl::Time now) {
  std::list<Waiter> expired;
  std::list<Waiter> granted;
  absl::Status why;
  {
    normd::MutexLock lock(&mu_);
    for (auto it = queue_.begin(); it != queue_.end();) {
      auto next = std::next(it);
      if (now - it->since >= max_wait_) expired.splice(expired.end(), queue_, it);
      it = next;
    }
    if (!expired.empty()) {
      why = absl::ResourceExhaustedError(
          absl::StrCat("normd is overloaded: this request waited ", absl::FormatDuration(max_wait_),
                       " for room to be read, while requests in flight held ", charged_, " of the ",
                       limit_bytes_, " bytes --max-memory-bytes leaves them; retry later"));
      GrantLocked(granted);
    }
  }
  for (Waiter& w : expired) w.on_ready(why);
  for (Waiter& w : granted) w.on_ready(absl::OkStatus());
}

int64_t MemoryGate::charged_bytes() const {
  normd::MutexLock lock(&mu_);
  return charged_;
}

size_t MemoryGate::waiting() const {
  normd::MutexLock lock(&mu_);
  return queue_.size();
}

}  // namespace normd
