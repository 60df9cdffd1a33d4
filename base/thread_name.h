// Names the calling thread, as `top -H`, /proc/<pid>/task/<tid>/comm and profilers show it.
//
// Why: normd's own threads (workers, copy and reply helpers, the CPU backend's pool) run beside
// gRPC's, and tests/gpu/cpu_point.py splits normd's CPU time by thread name to tell which of them
// costs what under load. Linux keeps at most 15 characters; longer names are cut.
#ifndef NORMD_BASE_THREAD_NAME_H_
#define NORMD_BASE_THREAD_NAME_H_

#include <pthread.h>

#include <string>

namespace normd {

inline void NameThisThread(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace normd

#endif  // NORMD_BASE_THREAD_NAME_H_
