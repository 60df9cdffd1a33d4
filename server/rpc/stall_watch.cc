#include "server/rpc/stall_watch.h"

#include <utility>
#include <vector>

namespace normd {

StallWatch::Ticket StallWatch::Watch(absl::Time now, std::function<void()> on_stall) {
  normd::MutexLock lock(&mu_);
  const Ticket ticket = next_ticket_++;
  entries_.emplace(ticket, Entry{now + timeout_, std::move(on_stall)});
  return ticket;
}

bool StallWatch::Unwatch(Ticket ticket) {
  normd::MutexLock lock(&mu_);
  return entries_.erase(ticket) > 0;
}

void StallWatch::ExpireDue(absl::Time now) {
  std::vector<std::function<void()>> due;
  {
    normd::MutexLock lock(&mu_);
    // Deadlines do not follow ticket order exactly (callers pass their own `now`), so every entry
    // is looked at; there is one per stream with a write outstanding.
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.deadline > now) {
        ++it;
        continue;
      }
      due.push_back(std::move(it->second.on_stall));
      it = entries_.erase(it);
    }
  }
  for (auto& on_stall : due) on_stall();
}

size_t StallWatch::watched() const {
  normd::MutexLock lock(&mu_);
  return entries_.size();
}

}  // namespace normd
