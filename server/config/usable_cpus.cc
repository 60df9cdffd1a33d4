#include "server/config/usable_cpus.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace normd {
namespace {

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// One cgroup hierarchy this process belongs to: where it is mounted and the process's cgroup in it.
struct Hierarchy {
  std::string mount_point;  // e.g. /sys/fs/cgroup or /sys/fs/cgroup/cpu,cpuacct
  std::string cgroup;       // the process's cgroup below the mount's root, e.g. /kubepods/pod1
};

// The mount of cgroup v2 (`v2`) or of v1's cpu controller, from /proc/self/mountinfo. Field 4 is
// the mount's root within the hierarchy (a container sees its own cgroup as "/"), field 5 the mount
// point; after " - " come the file system type and its options.
std::optional<std::pair<std::string, std::string>> FindMount(const std::string& mountinfo,
                                                             bool v2) {
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n')) {
    const size_t dash = line.find(" - ");
    if (dash == absl::string_view::npos) continue;
    const std::vector<absl::string_view> fields = absl::StrSplit(line.substr(0, dash), ' ');
    const std::vector<absl::string_view> tail =
        absl::StrSplit(line.substr(dash + 3), ' ', absl::SkipEmpty());
    if (fields.size() < 5 || tail.size() < 3) continue;
    if (v2 && tail[0] == "cgroup2")
      return std::make_pair(std::string(fields[3]), std::string(fields[4]));
    if (!v2 && tail[0] == "cgroup") {
      for (absl::string_view option : absl::StrSplit(tail[2], ',')) {
        if (option == "cpu") return std::make_pair(std::string(fields[3]), std::string(fields[4]));
      }
    }
  }
  return std::nullopt;
}

// The process's cgroup path in v2 ("0::/path") or in v1's cpu hierarchy ("N:cpu,cpuacct:/path").
std::optional<std::string> CgroupPath(const std::string& proc_cgroup, bool v2) {
  for (absl::string_view line : absl::StrSplit(proc_cgroup, '\n')) {
    const std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    if (v2 && parts[0] == "0" && parts[1].empty()) return std::string(parts[2]);
    if (!v2) {
      for (absl::string_view controller : absl::StrSplit(parts[1], ',')) {
        if (controller == "cpu") return std::string(parts[2]);
      }
    }
  }
  return std::nullopt;
}

std::optional<Hierarchy> FindHierarchy(const std::string& root, bool v2) {
  const auto mountinfo = ReadFile(root + "/proc/self/mountinfo");
  const auto proc_cgroup = ReadFile(root + "/proc/self/cgroup");
  if (!mountinfo || !proc_cgroup) return std::nullopt;
  const auto mount = FindMount(*mountinfo, v2);
  auto path = CgroupPath(*proc_cgroup, v2);
  if (!mount || !path) return std::nullopt;
  // The path is relative to the hierarchy's root; the mount shows the hierarchy from mount->first.
  absl::string_view relative = *path;
  if (mount->first != "/") {
    if (!absl::ConsumePrefix(&relative, mount->first)) relative = "";
  }
  return Hierarchy{root + mount->second, std::string(relative)};
}

// The quota one cgroup directory sets, in CPUs; nullopt for none ("max", -1) or unreadable.
std::optional<double> QuotaIn(const std::string& dir, bool v2) {
  double quota = 0, period = 0;
  if (v2) {
    const auto text = ReadFile(dir + "/cpu.max");
    if (!text) return std::nullopt;
    const std::vector<absl::string_view> parts =
        absl::StrSplit(absl::StripAsciiWhitespace(*text), ' ', absl::SkipEmpty());
    if (parts.size() != 2 || parts[0] == "max") return std::nullopt;
    if (!absl::SimpleAtod(parts[0], &quota) || !absl::SimpleAtod(parts[1], &period))
      return std::nullopt;
  } else {
    const auto quota_text = ReadFile(dir + "/cpu.cfs_quota_us");
    const auto period_text = ReadFile(dir + "/cpu.cfs_period_us");
    if (!quota_text || !period_text ||
        !absl::SimpleAtod(absl::StripAsciiWhitespace(*quota_text), &quota) ||
        !absl::SimpleAtod(absl::StripAsciiWhitespace(*period_text), &period)) {
      return std::nullopt;
    }
  }
  if (quota <= 0 || period <= 0) return std::nullopt;
  return quota / period;
}

}  // namespace

std::optional<double> CgroupCpuQuota(const std::string& root) {
  // Both versions are read: a hybrid system mounts v2 without its cpu controller beside v1's.
  std::optional<double> tightest;
  for (const bool v2 : {true, false}) {
    const auto hierarchy = FindHierarchy(root, v2);
    if (!hierarchy) continue;
    // A quota anywhere above the process's cgroup limits it too: take the tightest on the way up.
    std::string cgroup = hierarchy->cgroup;
    while (true) {
      if (const auto quota = QuotaIn(hierarchy->mount_point + cgroup, v2)) {
        tightest = tightest ? std::min(*tightest, *quota) : *quota;
      }
      if (cgroup.empty() || cgroup == "/") break;
      cgroup = cgroup.substr(0, cgroup.rfind('/'));
    }
  }
  return tightest;
}

int AffinityCpuCount() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0) {
    const int count = CPU_COUNT(&mask);
    if (count > 0) return count;
  }
  // A mask wider than cpu_set_t (over 1024 CPUs) fails above; the machine's count is the best left.
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int UsableCpuCount() {
  const int affinity = AffinityCpuCount();
  const std::optional<double> quota = CgroupCpuQuota();
  if (!quota) return affinity;
  return std::clamp(static_cast<int>(std::floor(*quota)), 1, affinity);
}

}  // namespace normd
