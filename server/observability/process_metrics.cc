#include "server/observability/process_metrics.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "server/core/large_buffer_pool.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace normd {
namespace {

prometheus::MetricFamily Family(std::string name, std::string help, prometheus::MetricType type) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

void AddValue(prometheus::MetricFamily& family, double value,
              std::vector<prometheus::ClientMetric::Label> labels = {}) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  if (family.type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  family.metric.push_back(std::move(metric));
}

// Resident pages from /proc/self/statm (its second field), in bytes; -1 when unreadable.
double ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  long long size_pages = 0, resident_pages = -1;
  if (!(statm >> size_pages >> resident_pages)) return -1;
  return static_cast<double>(resident_pages) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

// User + system CPU time from /proc/self/stat (fields 14 and 15, after the parenthesised command
// name, which may itself hold spaces), in seconds; -1 when unreadable.
double CpuSeconds() {
  std::ifstream stat_file("/proc/self/stat");
  std::string line;
  if (!std::getline(stat_file, line)) return -1;
  const size_t after_name = line.rfind(')');
  if (after_name == std::string::npos) return -1;
  std::istringstream fields(line.substr(after_name + 2));  // from field 3, the state
  std::string field;
  double utime = 0, stime = 0;
  for (int index = 3; index <= 15 && fields >> field; ++index) {
    if (index == 14) utime = std::stod(field);
    if (index == 15) stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

std::vector<prometheus::MetricFamily> ProcessMetrics::Collect() const {
  std::vector<prometheus::MetricFamily> families;
  if (const double rss = ResidentBytes(); rss >= 0) {
    prometheus::MetricFamily family =
        Family("process_resident_memory_bytes", "Resident memory size in bytes",
               prometheus::MetricType::Gauge);
    AddValue(family, rss);
    families.push_back(std::move(family));
  }
  if (const double cpu = CpuSeconds(); cpu >= 0) {
    prometheus::MetricFamily family =
        Family("process_cpu_seconds_total", "Total user and system CPU time spent in seconds",
               prometheus::MetricType::Counter);
    AddValue(family, cpu);
    families.push_back(std::move(family));
  }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  // mallinfo2 walks every arena under its lock: cheap at normd's few (--malloc-arenas), and only
  // per scrape.
  const struct mallinfo2 heap = mallinfo2();
  prometheus::MetricFamily family =
      Family("normd_allocator_bytes",
             "glibc heap: bytes handed out to the program (in_use, mmapped blocks included) and "
             "free bytes inside "
             "the allocator's heaps (free_held; only the pages once touched are resident)",
             prometheus::MetricType::Gauge);
  AddValue(family, static_cast<double>(heap.uordblks + heap.hblkhd), {{"state", "in_use"}});
  AddValue(family, static_cast<double>(heap.fordblks), {{"state", "free_held"}});
  families.push_back(std::move(family));
#endif
  // LargeBufferPool: sent responses' large buffers kept for the next (--response-pool-bytes), a
  // part of resident memory that is neither live data nor the allocator's.
  const LargeBufferPool& pool = LargeBufferPool::Shared();
  prometheus::MetricFamily idle = Family(
      "normd_response_pool_idle_bytes",
      "Bytes of sent responses' 32 MiB-and-larger tensor buffers kept for the next such responses",
      prometheus::MetricType::Gauge);
  AddValue(idle, static_cast<double>(pool.idle_bytes()));
  families.push_back(std::move(idle));
  prometheus::MetricFamily takes = Family(
      "normd_response_pool_takes_total",
      "Large response buffers handed out: reused (kept from an earlier response) or mapped (new)",
      prometheus::MetricType::Counter);
  AddValue(takes, static_cast<double>(pool.reused()), {{"source", "reused"}});
  AddValue(takes, static_cast<double>(pool.mapped()), {{"source", "mapped"}});
  families.push_back(std::move(takes));
  return families;
}

}  // namespace normd
