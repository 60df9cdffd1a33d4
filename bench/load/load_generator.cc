#include "bench/load/load_generator.h"

#include <random>
#include <utility>

#include "absl/time/clock.h"

namespace normd::bench {

LoadGenerator::LoadGenerator(std::vector<Client*> clients,
                             std::shared_ptr<const PreparedRequest> request, uint64_t seed)
    : LoadGenerator(std::move(clients), RequestTable{{std::move(request)}}, seed) {}

LoadGenerator::LoadGenerator(std::vector<Client*> clients, RequestTable requests, uint64_t seed)
    : clients_(std::move(clients)), requests_(std::move(requests)), seed_(seed) {}

LoadGenerator::~LoadGenerator() { Stop(); }

void LoadGenerator::Start(const LoadSpec& spec) {
  spec_ = spec;
  if (spec.stream) session_ = clients_.front()->OpenStream();
  {
    normd::MutexLock lock(&mu_);
    running_ = true;
    window_start_ = absl::Now();
    stats_ = WindowStats();
  }
  if (spec.request_rate > 0) {
    arrivals_ = std::thread([this, spec] { RunArrivals(spec); });
    return;
  }
  const absl::Time now = absl::Now();
  for (int i = 0; i < spec.concurrency; ++i) Issue(now, i);
}

void LoadGenerator::Stop() {
  {
    normd::MutexLock lock(&mu_);
    running_ = false;
  }
  if (arrivals_.joinable()) arrivals_.join();
  {
    normd::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](int64_t* n) { return *n == 0; }, &in_flight_));
  }
  if (session_) {
    session_->Finish().IgnoreError();  // errors were counted per request
    session_.reset();
  }
}

WindowStats LoadGenerator::Collect() {
  normd::MutexLock lock(&mu_);
  const absl::Time now = absl::Now();
  WindowStats out = std::move(stats_);
  out.length = now - window_start_;
  stats_ = WindowStats();
  window_start_ = now;
  return out;
}

int64_t LoadGenerator::PeekOk() {
  normd::MutexLock lock(&mu_);
  return stats_.ok();
}

void LoadGenerator::Issue(absl::Time scheduled, int64_t slot) {
  {
    normd::MutexLock lock(&mu_);
    ++in_flight_;
  }
  auto done = [this, scheduled, slot](absl::StatusOr<NormalizeResult> result) {
    OnDone(scheduled, slot, result);
  };
  auto request_of = [this, slot](size_t client) {
    const auto& row = requests_[client % requests_.size()];
    return row[static_cast<size_t>(slot) % row.size()];
  };
  if (session_) {
    session_->Send(request_of(0), std::move(done));
  } else {
    const size_t c = next_client_.fetch_add(1, std::memory_order_relaxed) % clients_.size();
    clients_[c]->NormalizeAsync(request_of(c), std::move(done));
  }
}

void LoadGenerator::OnDone(absl::Time scheduled, int64_t slot,
                           const absl::StatusOr<NormalizeResult>& result) {
  const absl::Time now = absl::Now();
  bool again;
  {
    normd::MutexLock lock(&mu_);
    if (result.ok()) {
      stats_.latencies_us.push_back(
          static_cast<uint32_t>(absl::ToInt64Microseconds(now - scheduled)));
      stats_.batch_requests_sum += result->timing.batch_requests();
    } else {
      ++stats_.errors[result.status().code()];
    }
    again = running_ && spec_.request_rate <= 0;
    // Counted down only after the next request is counted up, so Stop never sees zero in between.
    if (!again) --in_flight_;
  }
  if (again) {
    Issue(absl::Now(), slot);
    normd::MutexLock lock(&mu_);
    --in_flight_;
  }
}

void LoadGenerator::RunArrivals(LoadSpec spec) {
  std::mt19937_64 rng(seed_);
  std::exponential_distribution<double> gap(spec.request_rate);
  absl::Time next = absl::Now();
  for (int64_t arrival = 0;; ++arrival) {
    {
      normd::MutexLock lock(&mu_);
      if (!running_) return;
    }
    const double seconds = spec.poisson ? gap(rng) : 1.0 / spec.request_rate;
    next += absl::Seconds(seconds);
    const absl::Duration wait = next - absl::Now();
    if (wait > absl::ZeroDuration()) absl::SleepFor(wait);
    Issue(next, arrival);
  }
}

}  // namespace normd::bench
