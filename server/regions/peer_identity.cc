#include "server/regions/peer_identity.h"

#include <arpa/inet.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace normd {
namespace {

constexpr unsigned char kLoopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
constexpr unsigned char kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

// An address as /proc/net/tcp prints it: the 32-bit words of the address in memory, each printed
// as a native (little-endian on x86) integer in hex, then ':' and the port in hex.
std::string KernelSocketAddress(const unsigned char* bytes, size_t length, int port) {
  std::string out;
  for (size_t word = 0; word < length / 4; ++word) {
    uint32_t value;
    std::memcpy(&value, bytes + word * 4, 4);
    out += absl::StrFormat("%08X", value);
  }
  return absl::StrFormat("%s:%04X", out, port);
}

// The uid of the ESTABLISHED sockets whose local address is `wanted` in one of the kernel's
// tables, if they agree; `found` says whether any matched.
std::optional<uid_t> OwnerIn(const char* table_path, const std::string& wanted, bool& found,
                             bool& ambiguous) {
  std::ifstream table(table_path);
  std::string line;
  std::getline(table, line);  // the header
  std::optional<uid_t> owner;
  // Columns: sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid ...
  constexpr size_t kLocal = 1, kState = 3, kUid = 7;
  constexpr absl::string_view kEstablished = "01";
  while (std::getline(table, line)) {
    const std::vector<absl::string_view> columns =
        absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (columns.size() <= kUid || columns[kLocal] != wanted || columns[kState] != kEstablished) {
      continue;
    }
    uint32_t uid = 0;
    if (!absl::SimpleAtoi(columns[kUid], &uid) || (owner.has_value() && *owner != uid)) {
      ambiguous = true;
      return std::nullopt;
    }
    owner = uid;
    found = true;
  }
  return owner;
}

}  // namespace

void PeerDirectory::RecordUnixPeer(int fd, uid_t uid, pid_t pid) {
  normd::MutexLock lock(&mu_);
  unix_peers_[fd] = UnixPeer{uid, pid};
}

PeerIdentity PeerDirectory::Identify(absl::string_view peer) const {
  PeerIdentity identity;
  if (absl::ConsumePrefix(&peer, "fd:")) {
    int fd = -1;
    if (!absl::SimpleAtoi(peer, &fd)) return identity;
    normd::MutexLock lock(&mu_);
    const auto it = unix_peers_.find(fd);
    if (it == unix_peers_.end()) return identity;  // a descriptor normd did not accept
    identity.local = true;
    identity.uid = it->second.uid;
    return identity;
  }
  const bool ipv4 = absl::ConsumePrefix(&peer, "ipv4:");
  const bool ipv6 = !ipv4 && absl::ConsumePrefix(&peer, "ipv6:");
  if (!ipv4 && !ipv6) return identity;  // "unix:" and anything else: see the header
  const size_t colon = peer.rfind(':');
  if (colon == absl::string_view::npos) return identity;
  int port = 0;
  if (!absl::SimpleAtoi(peer.substr(colon + 1), &port) || port <= 0 || port > 65535) {
    return identity;
  }
  absl::string_view host = peer.substr(0, colon);
  if (ipv6) {
    if (!absl::ConsumePrefix(&host, "[") || !absl::ConsumeSuffix(&host, "]")) return identity;
    // A scope ("%lo") is not part of the address.
    host = host.substr(0, host.find('%'));
  }
  // The address as IPv6 (an IPv4 one as ::ffff:a.b.c.d): gRPC names a client of its dual-stack
  // listener "ipv4:" while either side's socket may be IPv6.
  unsigned char bytes[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  const std::string host_string(host);
  if (inet_pton(ipv4 ? AF_INET : AF_INET6, host_string.c_str(), ipv4 ? bytes + 12 : bytes) != 1) {
    return identity;
  }
  const bool mapped = std::memcmp(bytes, kMappedPrefix, 12) == 0;
  identity.local = mapped ? bytes[12] == 127 : std::memcmp(bytes, kLoopback, 16) == 0;
  if (identity.local) identity.uid = LoopbackSocketOwner(bytes, port);
  return identity;
}

std::optional<uid_t> PeerDirectory::LoopbackSocketOwner(const unsigned char* address, int port) {
  bool found = false, ambiguous = false;
  std::optional<uid_t> v4, v6;
  if (std::memcmp(address, kMappedPrefix, 12) == 0) {
    v4 = OwnerIn("/proc/net/tcp", KernelSocketAddress(address + 12, 4, port), found, ambiguous);
  }
  v6 = OwnerIn("/proc/net/tcp6", KernelSocketAddress(address, 16, port), found, ambiguous);
  if (!found || ambiguous || (v4.has_value() && v6.has_value() && *v4 != *v6)) return std::nullopt;
  return v4.has_value() ? v4 : v6;
}

}  // namespace normd
