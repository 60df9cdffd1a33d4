// A client process for the shared-memory lifetime tests: connects to normd (argv[1], a gRPC
// target), registers a system region of argv[2] bytes, prints "registered <id>" and then waits to
// be killed, never unregistering: what a client that dies leaves behind.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "client/normd_client.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s TARGET BYTES\n", argv[0]);
    return 2;
  }
  normd::ClientOptions options;
  options.target = argv[1];
  options.own_connection = true;
  auto client = normd::Client::Connect(options);
  if (!client.ok()) return 1;
  auto memory = normd::SharedMemory::Create(std::atoll(argv[2]));
  if (!memory.ok()) return 1;
  auto region = (*client)->RegisterSystemRegion(**memory, "dies");
  if (!region.ok()) {
    std::fprintf(stderr, "%s\n", region.status().ToString().c_str());
    return 1;
  }
  std::printf("registered %s\n", region->id().c_str());
  std::fflush(stdout);
  while (true) pause();
}
