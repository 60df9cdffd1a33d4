// RegionRegistry in-process: sessions, ownership by connection, limits, and release only once the
// last holder lets go; with a fake DeviceMemory, the pinning of system regions and the opening of
// CUDA regions (which the CUDA backend does for real on a GPU machine).
#include "server/regions/region_registry.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace normd {
namespace {

// A POSIX shared-memory object of this process, removed at the end of the test.
class ShmObject {
 public:
  explicit ShmObject(int64_t bytes) : name_(absl::StrCat("/normd-unit-", getpid(), "-", next_++)) {
    const int fd = shm_open(name_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, bytes), 0);
    close(fd);
  }
  ~ShmObject() { shm_unlink(name_.c_str()); }
  const std::string& name() const { return name_; }

 private:
  static inline int next_ = 0;
  std::string name_;
};

// Counts what the registry asks of a GPU backend; "opens" allocations at made-up addresses.
class FakeDeviceMemory : public DeviceMemory {
 public:
  absl::Status Pin(void*, int64_t) override {
    ++pinned;
    return absl::OkStatus();
  }
  void Unpin(void*) override { --pinned; }
  absl::StatusOr<OpenedDeviceMemory> Open(absl::string_view handle,
                                          absl::string_view uuid) override {
    if (uuid != "gpu-1") return absl::NotFoundError("no GPU with that UUID");
    ++opened;
    return OpenedDeviceMemory{1, reinterpret_cast<char*>(0x700000000000) + handle.size(), 1 << 20};
  }
  void Close(const OpenedDeviceMemory&) override { --opened; }
  int pinned = 0;
  int opened = 0;
};

class RegionRegistryTest : public ::testing::Test {
 protected:
  RegionRegistryTest() {
    peers_.RecordUnixPeer(10, geteuid(), 1);
    peers_.RecordUnixPeer(11, geteuid(), 2);
  }
  RegionRegistry& Make(RegionRegistryOptions options, DeviceMemory* device = nullptr) {
    registry_ = std::make_unique<RegionRegistry>(options, peers_, device, nullptr);
    return *registry_;
  }
  static RegionRegistryOptions System() {
    RegionRegistryOptions options;
    options.system = true;
    options.max_bytes = 1 << 20;
    options.max_regions_per_client = 2;
    return options;
  }
  // Opens a session for `peer` that records how it ended.
  uint64_t Open(RegionRegistry& registry, const std::string& peer) {
    absl::StatusOr<uint64_t> token =
        registry.OpenSession(peer, [this](const absl::Status& s) { ends_.push_back(s); });
    EXPECT_TRUE(token.ok()) << token.status();
    return token.value_or(0);
  }

  PeerDirectory peers_;
  std::unique_ptr<RegionRegistry> registry_;
  std::vector<absl::Status> ends_;
  ShmObject object_{1 << 16};
};

TEST_F(RegionRegistryTest, ARegionBelongsToTheConnectionThatRegisteredIt) {
  RegionRegistry& registry = Make(System());
  EXPECT_EQ(registry.RegisterSystem("fd:10", object_.name(), 0, 4096, "").status().code(),
            absl::StatusCode::kFailedPrecondition)
      << "no session yet";
  Open(registry, "fd:10");
  Open(registry, "fd:11");
  EXPECT_EQ(registry.OpenSession("fd:10", [](const absl::Status&) {}).status().code(),
            absl::StatusCode::kAlreadyExists);
  absl::StatusOr<RegionRegistry::Registered> region =
      registry.RegisterSystem("fd:10", object_.name(), 0, 4096, "mine");
  ASSERT_TRUE(region.ok()) << region.status();
  EXPECT_TRUE(registry.Find("fd:10", region->id, "input.region").ok());
  absl::StatusOr<std::shared_ptr<const Region>> stolen =
      registry.Find("fd:11", region->id, "input.region");
  EXPECT_EQ(stolen.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(absl::StrContains(stolen.status().message(), "input.region.region_id"));
  EXPECT_EQ(registry.Unregister("fd:11", region->id).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(registry.List("fd:11").empty());
  ASSERT_EQ(registry.List("fd:10").size(), 1u);
  EXPECT_EQ(registry.Find("fd:10", "0123", "output_region").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(RegionRegistryTest, PeersOffThisHostAreRefused) {
  RegionRegistry& registry = Make(System());
  EXPECT_EQ(registry.OpenSession("ipv4:10.0.0.5:4000", [](const absl::Status&) {}).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(
      registry.RegisterSystem("ipv4:10.0.0.5:4000", object_.name(), 0, 16, "").status().code(),
      absl::StatusCode::kPermissionDenied);
}

TEST_F(RegionRegistryTest, LimitsPerConnectionAndInBytes) {
  RegionRegistry& registry = Make(System());
  Open(registry, "fd:10");
  Open(registry, "fd:11");
  ASSERT_TRUE(registry.RegisterSystem("fd:10", object_.name(), 0, 4096, "").ok());
  ASSERT_TRUE(registry.RegisterSystem("fd:10", object_.name(), 4096, 4096, "").ok());
  absl::StatusOr<RegionRegistry::Registered> third =
      registry.RegisterSystem("fd:10", object_.name(), 8192, 4096, "");
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  ShmObject big(1 << 20);
  absl::StatusOr<RegionRegistry::Registered> too_big =
      registry.RegisterSystem("fd:11", big.name(), 0, (1 << 20) - 8192 + 1, "");
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted) << too_big.status();
  EXPECT_EQ(registry.bytes_held(), 8192) << "a refused registration holds nothing";
  EXPECT_TRUE(registry.RegisterSystem("fd:11", big.name(), 0, (1 << 20) - 8192, "").ok());
}

TEST_F(RegionRegistryTest, BytesComeBackWhenTheLastHolderLetsGo) {
  RegionRegistry& registry = Make(System());
  Open(registry, "fd:10");
  absl::StatusOr<RegionRegistry::Registered> region =
      registry.RegisterSystem("fd:10", object_.name(), 0, 4096, "");
  ASSERT_TRUE(region.ok());
  absl::StatusOr<std::shared_ptr<const Region>> held = registry.Find("fd:10", region->id, "input");
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(registry.Unregister("fd:10", region->id).ok());
  EXPECT_EQ(registry.Find("fd:10", region->id, "input").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(registry.bytes_held(), 4096) << "a request still holds it";
  (*held)->base[0] = 1;  // still mapped
  held->reset();
  EXPECT_EQ(registry.bytes_held(), 0);
}

TEST_F(RegionRegistryTest, EndingASessionReleasesItsRegionsOnce) {
  RegionRegistry& registry = Make(System());
  const uint64_t token = Open(registry, "fd:10");
  ASSERT_TRUE(registry.RegisterSystem("fd:10", object_.name(), 0, 4096, "").ok());
  registry.EndSession("fd:10", token + 1);  // another session's token: not this one
  EXPECT_TRUE(ends_.empty());
  registry.EndSession("fd:10", token);
  registry.EndSession("fd:10", token);
  ASSERT_EQ(ends_.size(), 1u);
  EXPECT_EQ(ends_[0].code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(registry.bytes_held(), 0);
  EXPECT_TRUE(registry.List("fd:10").empty());
  // The connection may open a new session.
  Open(registry, "fd:10");
  registry.EndAllSessions();
  ASSERT_EQ(ends_.size(), 2u);
  EXPECT_EQ(ends_[1].code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(registry.OpenSession("fd:10", [](const absl::Status&) {}).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(RegionRegistryTest, KindsOffAreRefused) {
  RegionRegistryOptions cuda_only;
  cuda_only.cuda = true;
  cuda_only.max_bytes = 1 << 20;
  cuda_only.max_regions_per_client = 4;
  RegionRegistry& registry = Make(cuda_only);
  Open(registry, "fd:10");
  EXPECT_EQ(registry.RegisterSystem("fd:10", object_.name(), 0, 16, "").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(registry.RegisterCuda("fd:10", "handle", "gpu-1", 0, 16, "").status().code(),
            absl::StatusCode::kFailedPrecondition)
      << "cuda regions need a backend that opens them";
}

TEST_F(RegionRegistryTest, ADeviceBackendPinsSystemRegionsAndOpensCudaOnes) {
  FakeDeviceMemory device;
  RegionRegistryOptions both = System();
  both.cuda = true;
  both.max_regions_per_client = 8;
  RegionRegistry& registry = Make(both, &device);
  Open(registry, "fd:10");
  absl::StatusOr<RegionRegistry::Registered> system =
      registry.RegisterSystem("fd:10", object_.name(), 0, 4096, "");
  ASSERT_TRUE(system.ok());
  EXPECT_EQ(device.pinned, 1);
  absl::StatusOr<RegionRegistry::Registered> cuda =
      registry.RegisterCuda("fd:10", "handle", "gpu-1", 4096, 8192, "");
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  EXPECT_EQ(device.opened, 1);
  absl::StatusOr<std::shared_ptr<const Region>> region = registry.Find("fd:10", cuda->id, "input");
  ASSERT_TRUE(region.ok());
  EXPECT_EQ((*region)->device, 1);
  EXPECT_EQ((*region)->memory(), TensorMemory::kDevice);
  region->reset();
  absl::StatusOr<RegionRegistry::Registered> past_end =
      registry.RegisterCuda("fd:10", "handle", "gpu-1", (1 << 20) - 16, 32, "");
  EXPECT_EQ(past_end.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(device.opened, 1) << "the refused one was closed again";
  EXPECT_EQ(registry.RegisterCuda("fd:10", "handle", "gpu-9", 0, 16, "").status().code(),
            absl::StatusCode::kNotFound);
  registry.EndAllSessions();
  EXPECT_EQ(device.pinned, 0);
  EXPECT_EQ(device.opened, 0);
}

}  // namespace
}  // namespace normd
