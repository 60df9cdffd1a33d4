#include "tests/integration/test_pki.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace normd::testing {

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

TestPki::TestPki() : dir_(absl::StrCat(::testing::TempDir(), "normd-pki-", getpid(), "-", rand())) {
  std::system(absl::StrCat("rm -rf '", dir_, "' && mkdir -p '", dir_, "'").c_str());
  const std::string script = absl::StrCat(
      "set -e; cd '", dir_, "'\n",
      "key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out \"$1\" "
      "2>/dev/null; }\n",
      "ca() { key $1.key; openssl req -x509 -new -key $1.key -out $1.pem -days 1 -subj /CN=$1 "
      "-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign; "
      "}\n",
      // sign NAME CA EXTENSIONS
      "sign() { key $1.key; openssl req -new -key $1.key -out $1.csr -subj /CN=$1; printf '%s\\n' "
      "\"$3\" > $1.ext;"
      " openssl x509 -req -in $1.csr -CA $2.pem -CAkey $2.key -CAcreateserial -out $1.pem -days 1"
      " -extfile $1.ext 2>/dev/null; }\n",
      "ca ca; ca other-ca\n",
      "sign server ca 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth'\n",
      "sign client ca 'extendedKeyUsage=clientAuth'\n",
      "sign stranger other-ca 'extendedKeyUsage=clientAuth'\n");
  const std::string script_path = File("make-pki.sh");
  std::ofstream(script_path) << script;
  const int rc = std::system(
      absl::StrCat("bash '", script_path, "' > '", File("make-pki.log"), "' 2>&1").c_str());
  if (rc != 0)
    error_ = absl::StrCat("openssl failed (", rc, "):\n", ReadWholeFile(File("make-pki.log")));
}

TestPki::~TestPki() { std::system(absl::StrCat("rm -rf '", dir_, "'").c_str()); }

std::string TestPki::File(absl::string_view name) const { return absl::StrCat(dir_, "/", name); }

std::shared_ptr<grpc::ChannelCredentials> TestPki::ClientCredentials(absl::string_view identity,
                                                                     absl::string_view ca) const {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = ReadWholeFile(File(absl::StrCat(ca, ".pem")));
  if (!identity.empty()) {
    options.pem_cert_chain = ReadWholeFile(File(absl::StrCat(identity, ".pem")));
    options.pem_private_key = ReadWholeFile(File(absl::StrCat(identity, ".key")));
  }
  return grpc::SslCredentials(options);
}

}  // namespace normd::testing
