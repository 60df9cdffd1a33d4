// How many CPUs this process may run on: the size of its affinity mask, which is what `taskset`,
// `docker run --cpuset-cpus` and Kubernetes' static CPU manager set.
// std::thread::hardware_concurrency counts every online CPU of the machine instead, so a normd
// pinned to 4 of 16 cores would start 16 CPU-backend threads that take turns on 4.
#ifndef NORMD_SERVER_CONFIG_USABLE_CPUS_H_
#define NORMD_SERVER_CONFIG_USABLE_CPUS_H_

namespace normd {

// CPUs in the calling thread's affinity mask (a new process inherits its parent's); falls back to
// hardware_concurrency, then 1, when the mask cannot be read. Always >= 1.
int UsableCpuCount();

}  // namespace normd

#endif  // NORMD_SERVER_CONFIG_USABLE_CPUS_H_
