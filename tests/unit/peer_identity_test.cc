// PeerDirectory: which gRPC peers are on this host and which user runs them. Loopback owners come
// from the kernel's socket table: checked here on a real connection of this process.
#include "server/regions/peer_identity.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"

namespace normd {
namespace {

TEST(PeerIdentityTest, OnlyLoopbackAndAcceptedUnixPeersAreLocal) {
  PeerDirectory peers;
  EXPECT_FALSE(peers.Identify("ipv4:10.1.2.3:5000").local);
  EXPECT_FALSE(peers.Identify("ipv6:[2001:db8::1]:5000").local);
  EXPECT_FALSE(peers.Identify("unix:").local) << "gRPC's own Unix listener names no connection";
  EXPECT_FALSE(peers.Identify("fd:7").local) << "a descriptor normd did not accept";
  EXPECT_FALSE(peers.Identify("ipv4:127.0.0.1").local) << "no port";
  EXPECT_FALSE(peers.Identify("garbage").local);
  EXPECT_TRUE(peers.Identify("ipv4:127.0.0.1:5000").local);
  EXPECT_TRUE(peers.Identify("ipv4:127.3.4.5:5000").local);
  EXPECT_TRUE(peers.Identify("ipv6:[::1]:5000").local);
  EXPECT_TRUE(peers.Identify("ipv6:[::ffff:127.0.0.1]:5000").local);
  peers.RecordUnixPeer(7, 1234, 99);
  const PeerIdentity unix_peer = peers.Identify("fd:7");
  EXPECT_TRUE(unix_peer.local);
  ASSERT_TRUE(unix_peer.uid.has_value());
  EXPECT_EQ(*unix_peer.uid, 1234u);
}

TEST(PeerIdentityTest, ALoopbackPeersUserComesFromTheSocketTable) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  socklen_t length = sizeof address;
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  const int accepted = accept(listener, nullptr, nullptr);
  sockaddr_in client_address{};
  length = sizeof client_address;
  getsockname(client, reinterpret_cast<sockaddr*>(&client_address), &length);
  PeerDirectory peers;
  // What gRPC's server would call this connection's peer: the client's side.
  const PeerIdentity identity =
      peers.Identify(absl::StrCat("ipv4:127.0.0.1:", ntohs(client_address.sin_port)));
  EXPECT_TRUE(identity.local);
  ASSERT_TRUE(identity.uid.has_value());
  EXPECT_EQ(*identity.uid, geteuid());
  // A port nobody is connected from has no owner.
  EXPECT_FALSE(peers.Identify("ipv4:127.0.0.1:1").uid.has_value());
  close(accepted);
  close(client);
  close(listener);
}

}  // namespace
}  // namespace normd
