// How many CPUs normd may use, which sizes its CPU backend, polling, copy and reply threads.
//
// Two things limit it, and a container often sets only one of them:
// - the affinity mask, which `taskset`, `docker run --cpuset-cpus` and Kubernetes' static CPU
// manager
//   set (std::thread::hardware_concurrency counts every online CPU of the machine instead);
// - the cgroup CPU quota (cgroup v2's cpu.max, v1's cpu.cfs_quota_us / cpu.cfs_period_us), which
//   `docker run --cpus` and a Kubernetes CPU limit set while leaving every core in the mask. A
//   normd limited to 2 CPUs of a 64-core node that sized its threads for 64 would spend its quota
//   spinning and be throttled.
// The usable count is the smaller of the two, the quota rounded down (at least 1): a thread that
// polls wants a whole CPU.
#ifndef NORMD_SERVER_CONFIG_USABLE_CPUS_H_
#define NORMD_SERVER_CONFIG_USABLE_CPUS_H_

#include <optional>
#include <string>

namespace normd {

// CPUs normd may use: min(affinity mask, cgroup quota); always >= 1.
int UsableCpuCount();

// CPUs in the calling thread's affinity mask (a new process inherits its parent's); falls back to
// hardware_concurrency, then 1, when the mask cannot be read. Always >= 1.
int AffinityCpuCount();

// The CPU quota of this process's cgroup and every cgroup above it (the tightest), in CPUs, read
// below `root` ("/" on a real system; tests pass a fake tree holding proc/self/cgroup,
// proc/self/mountinfo and the cgroup files). nullopt when no quota is set or none can be read.
std::optional<double> CgroupCpuQuota(const std::string& root = "/");

}  // namespace normd

#endif  // NORMD_SERVER_CONFIG_USABLE_CPUS_H_
