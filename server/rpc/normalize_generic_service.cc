#include "server/rpc/normalize_generic_service.h"

namespace normd {

grpc::ServerGenericBidiReactor* NormalizeGenericService::CreateReactor(
    grpc::GenericCallbackServerContext* context) {
  if (context->method() == kNormalizeMethod) {
    return new NormalizeCallReactor(context, scheduler_, weights_, options_);
  }
  return grpc::CallbackGenericService::CreateReactor(context);  // UNIMPLEMENTED
}

}  // namespace normd
