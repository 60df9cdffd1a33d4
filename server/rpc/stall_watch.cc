#include "server/rpc/stall_watch.h"

#include <utility>
#include <vector>

namespace normd {

StallWatch::Ticket StallWatch::Watch(absl::Time now, OnStall on_stall) {
  normd::MutexLock lock(&mu_);
  const Ticket ticket = next_ticket_++;
  entries_.emplace(ticket, Entry{now, std::move(on_stall)});
  return ticket;
}

bool StallWatch::Unwatch(Ticket ticket) {
  normd::MutexLock lock(&mu_);
  return entries_.erase(ticket) > 0;
}

void StallWatch::ExpireDue(absl::Time now, bool under_pressure) {
  const bool pressure_applies = under_pressure && pressure_timeout_ > absl::ZeroDuration();
  std::vector<std::pair<OnStall, Stall>> due;
  {
    normd::MutexLock lock(&mu_);
    // Starts do not follow ticket order exactly (callers pass their own `now`), so every entry is
    // looked at; there is one per stream with a write outstanding.
    for (auto it = entries_.begin(); it != entries_.end();) {
      const absl::Duration outstanding = now - it->second.since;
      const bool past_timeout = outstanding >= timeout_;
      if (!past_timeout && !(pressure_applies && outstanding >= pressure_timeout_)) {
        ++it;
        continue;
      }
      due.emplace_back(std::move(it->second.on_stall), Stall{outstanding, !past_timeout});
      it = entries_.erase(it);
    }
  }
  for (auto& [on_stall, stall] : due) on_stall(stall);
}

size_t StallWatch::watched() const {
  normd::MutexLock lock(&mu_);
  return entries_.size();
}

}  // namespace normd
