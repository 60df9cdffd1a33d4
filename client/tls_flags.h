// The client-side TLS flags normctl and normbench share: --tls, --tls-ca, --tls-cert, --tls-key,
// --tls-server-name (see ClientTlsOptions in channel.h). A library of its own so that only the
// tools that connect to normd as clients list them (normd-echo, a server, does not).
#ifndef NORMD_CLIENT_TLS_FLAGS_H_
#define NORMD_CLIENT_TLS_FLAGS_H_

#include "client/channel.h"

namespace normd {

// The TLS options the command line asked for.
ClientTlsOptions ClientTlsOptionsFromFlags();

}  // namespace normd

#endif  // NORMD_CLIENT_TLS_FLAGS_H_
