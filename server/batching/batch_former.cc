#include "server/batching/batch_former.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace normd {
namespace {

bool SameGroup(const WorkItem& a, const WorkItem& b) {
  return a.request.dtype == b.request.dtype && a.request.hidden == b.request.hidden;
}

}  // namespace

void RemoveDeadRequests(WorkQueue& queue, absl::Time now,
                        std::vector<std::pair<std::unique_ptr<WorkItem>, absl::Status>>& dropped) {
  for (auto it = queue.begin(); it != queue.end();) {
    WorkItem& item = **it;
    absl::Status status;
    if (item.is_cancelled && item.is_cancelled()) {
      status = absl::CancelledError("the client cancelled the request before it was computed");
    } else if (now >= item.deadline) {
      status = absl::DeadlineExceededError(
          absl::StrCat("deadline passed after ", absl::FormatDuration(now - item.enqueued),
                       " in normd's queue, before any compute was spent on the request"));
    }
    if (status.ok()) {
      ++it;
      continue;
    }
    dropped.emplace_back(std::move(*it), std::move(status));
    it = queue.erase(it);
  }
}

CompanyMemory::CompanyMemory(int launches)
    : recent_(static_cast<size_t>(std::max(1, launches)), 1) {}

void CompanyMemory::Record(int64_t requests) {
  recent_[next_] = requests;
  next_ = (next_ + 1) % recent_.size();
}

int64_t CompanyMemory::Expected(const BatchLimits& limits) const {
  const int64_t most = *std::max_element(recent_.begin(), recent_.end());
  return std::min(most, limits.company_max_requests);
}

bool WaitsForCompany(const BatchLimits& limits, int64_t expected_requests) {
  return limits.company_wait > absl::ZeroDuration() &&
         expected_requests >= std::max<int64_t>(2, limits.company_min_requests);
}

absl::Time NextLaunchTime(const WorkQueue& queue, const BatchLimits& limits, absl::Time now,
                          int64_t expected_requests) {
  const WorkItem& oldest = *queue.front();
  const bool waits_for_company = WaitsForCompany(limits, expected_requests);
  if (limits.max_queue_delay <= absl::ZeroDuration() && !waits_for_company) return now;
  int64_t rows = 0, bytes = 0, requests = 0;
  for (const auto& item : queue) {
    if (!SameGroup(*item, oldest)) continue;
    rows += item->rows();
    bytes += item->bytes();
    ++requests;
    // A full launch is ready: waiting longer cannot add anything to it.
    if (rows >= limits.max_rows || bytes >= limits.max_bytes) return now;
  }
  absl::Time until = now;
  if (limits.max_queue_delay > absl::ZeroDuration())
    until = oldest.enqueued + limits.max_queue_delay;
  if (waits_for_company && requests < expected_requests) {
    until = std::max(until, oldest.enqueued + limits.company_wait);
  }
  return std::max(now, std::min(until, oldest.deadline));
}

Launch TakeLaunch(WorkQueue& queue, const BatchLimits& limits) {
  Launch launch;
  launch.dtype = queue.front()->request.dtype;
  launch.hidden = queue.front()->request.hidden;
  for (auto it = queue.begin(); it != queue.end();) {
    WorkItem& item = **it;
    // The oldest request always goes, even alone over the caps; the rest join while they fit.
    if (!launch.items.empty()) {
      const bool fits = launch.rows + item.rows() <= limits.max_rows &&
                        launch.bytes + item.bytes() <= limits.max_bytes;
      if (!SameGroup(item, *launch.items.front()) || !fits) {
        ++it;
        continue;
      }
    }
    launch.rows += item.rows();
    launch.bytes += item.bytes();
    launch.items.push_back(std::move(*it));
    it = queue.erase(it);
  }
  return launch;
}

}  // namespace normd
