// What a backend is once built: its name, its workers (each owning an executor) and the devices
// GetServerInfo reports.
#ifndef NORMD_SERVER_STARTUP_BACKEND_H_
#define NORMD_SERVER_STARTUP_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "normd/v1/normd.pb.h"
#include "server/batching/worker.h"

namespace normd {

struct Backend {
  std::string name;  // "cpu" or "cuda"
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<normd::v1::Device> devices;
};

}  // namespace normd

#endif  // NORMD_SERVER_STARTUP_BACKEND_H_
