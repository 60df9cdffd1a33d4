#include "bench/load/load_stats.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace normd::bench {

int64_t WindowStats::error_count() const {
  int64_t n = 0;
  for (const auto& [code, count] : errors) n += count;
  return n;
}

double WindowStats::throughput_rps() const {
  const double seconds = absl::ToDoubleSeconds(length);
  return seconds > 0 ? static_cast<double>(ok()) / seconds : 0.0;
}

double WindowStats::mean_batch_requests() const {
  return ok() > 0 ? static_cast<double>(batch_requests_sum) / static_cast<double>(ok()) : 0.0;
}

double WindowStats::mean_latency_us() const {
  if (latencies_us.empty()) return 0.0;
  double sum = 0;
  for (uint32_t l : latencies_us) sum += l;
  return sum / static_cast<double>(latencies_us.size());
}

double WindowStats::Percentile(double q) {
  if (latencies_us.empty()) return 0.0;
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(latencies_us.size())));
  const size_t index = std::min(latencies_us.size() - 1, rank == 0 ? 0 : rank - 1);
  std::nth_element(latencies_us.begin(), latencies_us.begin() + static_cast<std::ptrdiff_t>(index),
                   latencies_us.end());
  return latencies_us[index];
}

void WindowStats::Merge(const WindowStats& other) {
  length += other.length;
  latencies_us.insert(latencies_us.end(), other.latencies_us.begin(), other.latencies_us.end());
  for (const auto& [code, count] : other.errors) errors[code] += count;
  batch_requests_sum += other.batch_requests_sum;
}

bool LastThreeAgree(const std::vector<WindowStats>& windows, double tolerance) {
  if (windows.size() < 3) return false;
  double values[3], mean = 0;
  for (int i = 0; i < 3; ++i) {
    values[i] = windows[windows.size() - 3 + i].throughput_rps();
    mean += values[i] / 3;
  }
  if (mean <= 0) return false;
  for (double v : values) {
    if (std::abs(v - mean) > tolerance * mean) return false;
  }
  return true;
}

PairedRatios PairWindowRatios(const std::vector<WindowStats>& target,
                              const std::vector<WindowStats>& baseline) {
  std::vector<double> ratios;
  for (size_t i = 0; i < std::min(target.size(), baseline.size()); ++i) {
    const double base = baseline[i].throughput_rps();
    if (base > 0) ratios.push_back(target[i].throughput_rps() / base);
  }
  PairedRatios out;
  if (ratios.empty()) return out;
  std::sort(ratios.begin(), ratios.end());
  const size_t n = ratios.size();
  out.pairs = static_cast<int>(n);
  out.median = n % 2 == 1 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
  out.min = ratios.front();
  out.max = ratios.back();
  return out;
}

std::string ErrorsByCode(const WindowStats& stats) {
  std::vector<std::string> parts;
  for (const auto& [code, count] : stats.errors)
    parts.push_back(absl::StrCat(absl::StatusCodeToString(code), "=", count));
  return absl::StrJoin(parts, " ");
}

}  // namespace normd::bench
