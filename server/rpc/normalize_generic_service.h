// The calls normd serves through gRPC's callback generic API: Normalize (normalize_call_reactor.h,
// which reads its message only once the memory budget has room). Every other method that the
// typed services do not register is answered UNIMPLEMENTED, as gRPC would.
#ifndef NORMD_SERVER_RPC_NORMALIZE_GENERIC_SERVICE_H_
#define NORMD_SERVER_RPC_NORMALIZE_GENERIC_SERVICE_H_

#include <grpcpp/generic/async_generic_service.h>

#include "server/rpc/normalize_call_reactor.h"
#include "server/rpc/weight_registry.h"
#include "server/scheduling/scheduler.h"

namespace normd {

class NormalizeGenericService final : public grpc::CallbackGenericService {
 public:
  // The full name gRPC routes Normalize calls by.
  static constexpr char kNormalizeMethod[] = "/normd.v1.Normalizer/Normalize";

  // Borrows the scheduler, the registry and what `options` points to; all must outlive the
  // service.
  NormalizeGenericService(Scheduler& scheduler, WeightRegistry& weights,
                          NormalizeCallOptions options)
      : scheduler_(scheduler), weights_(weights), options_(options) {}

  grpc::ServerGenericBidiReactor* CreateReactor(
      grpc::GenericCallbackServerContext* context) override;

 private:
  Scheduler& scheduler_;
  WeightRegistry& weights_;
  const NormalizeCallOptions options_;
};

}  // namespace normd

#endif  // NORMD_SERVER_RPC_NORMALIZE_GENERIC_SERVICE_H_
