// What a backend is once built: its name, its workers (each owning an executor), the devices
// GetServerInfo reports, and what it lends shared-memory regions.
#ifndef NORMD_SERVER_STARTUP_BACKEND_H_
#define NORMD_SERVER_STARTUP_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "normd/v1/normd.pb.h"
#include "server/batching/worker.h"
#include "server/regions/device_memory.h"

namespace normd {

struct Backend {
  std::string name;  // "cpu" or "cuda"
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<normd::v1::Device> devices;
  // The CUDA backend's registration of system regions and opening of CUDA regions; null on the
  // CPU backend (which computes system regions on the host).
  std::unique_ptr<DeviceMemory> device_memory;
};

}  // namespace normd

#endif  // NORMD_SERVER_STARTUP_BACKEND_H_
