// normbench's requests over shared memory (--transport=shm, cuda-ipc). Each connection registers
// one region (its own registration: regions belong to a connection) holding, for every in-flight
// slot, that slot's input (and residual) and its outputs. The tensors are written once, at set-up;
// each request then carries references alone, and the server writes the outputs into the slot.
// Nothing is read back: the figure is the transport's and the server's, as Triton's perf_analyzer
// measures its shared-memory mode. (SharedMemoryTransport, client/shm_transport.h, adds a copy
// each way for callers whose tensors live in their own memory.)
#ifndef NORMD_BENCH_LOAD_REGION_LOAD_H_
#define NORMD_BENCH_LOAD_REGION_LOAD_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/load/load_generator.h"
#include "client/normd_client.h"

namespace normd::bench {

enum class Transport { kBytes, kSharedMemory, kCudaIpc };
absl::StatusOr<Transport> ParseTransport(const std::string& name);

// The request's contents, in float32, before they are placed.
struct LoadTensors {
  std::vector<float> input, residual, weight;  // residual empty: none
  int64_t rows = 0, hidden = 0;
  DType dtype = DType::kBFloat16;
};

// The device memory of a cuda-ipc load (bench/load/cuda_load_memory.h); opaque here.
class DeviceLoadMemory;

struct RegionLoad {
  RegionLoad();
  ~RegionLoad();  // the registrations go first, then the memory
  std::unique_ptr<SharedMemory> memory;
  std::unique_ptr<DeviceLoadMemory> device_memory;
  std::vector<RegisteredRegion> regions;  // one per client
  RequestTable requests;                  // [client][slot]
};

// Registers a region on every client and prepares `slots` requests for each. `weight` is the
// request's weight as Prepare takes it (inline, or registered on the first client).
absl::StatusOr<std::unique_ptr<RegionLoad>> MakeRegionLoad(Transport transport,
                                                           const std::vector<Client*>& clients,
                                                           int slots, const LoadTensors& tensors,
                                                           const WeightSource& weight);

}  // namespace normd::bench

#endif  // NORMD_BENCH_LOAD_REGION_LOAD_H_
