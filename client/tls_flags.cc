#include "client/tls_flags.h"

#include <string>

#include "absl/flags/flag.h"

ABSL_FLAG(bool, tls, false,
          "connect with TLS, trusting the system's roots (implied by --tls-ca, --tls-cert)");
ABSL_FLAG(std::string, tls_ca, "", "TLS: PEM file of the CA(s) normd's certificate must chain to");
ABSL_FLAG(std::string, tls_cert, "",
          "mutual TLS: PEM client certificate to present (with --tls-key)");
ABSL_FLAG(std::string, tls_key, "", "mutual TLS: PEM private key of --tls-cert");
ABSL_FLAG(std::string, tls_server_name, "",
          "TLS: name to verify in normd's certificate when it is not the target's host");

namespace normd {

ClientTlsOptions ClientTlsOptionsFromFlags() {
  ClientTlsOptions tls;
  tls.enabled = absl::GetFlag(FLAGS_tls);
  tls.ca_file = absl::GetFlag(FLAGS_tls_ca);
  tls.cert_file = absl::GetFlag(FLAGS_tls_cert);
  tls.key_file = absl::GetFlag(FLAGS_tls_key);
  tls.server_name = absl::GetFlag(FLAGS_tls_server_name);
  return tls;
}

}  // namespace normd
