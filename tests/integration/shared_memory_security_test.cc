// Shared memory's security checks against the real normd, each as a client would meet it: another
// connection's regions are refused (over the Unix socket, whose connections gRPC alone would not
// tell apart, and over loopback), peers from another host are refused, normd maps no object of
// another user, every bad reference is INVALID_ARGUMENT naming the field and the numbers, and
// shared memory is off unless asked for.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/region_test_util.h"

namespace normd::testing {
namespace {

constexpr int64_t kRows = 4, kHidden = 64;
constexpr int64_t kTensorBytes = kRows * kHidden * 2;  // bf16

class SharedMemorySecurityTest : public RegionSuiteTest<SharedMemorySecurityTest> {
 public:
  static constexpr char kTag[] = "shmsec";

 protected:
  void SetUp() override {
    RegionSuiteTest::SetUp();
    absl::StatusOr<std::unique_ptr<SharedMemory>> memory = SharedMemory::Create(1 << 16);
    ASSERT_TRUE(memory.ok()) << memory.status();
    memory_ = *std::move(memory);
  }
  std::vector<float> weight_ = std::vector<float>(kHidden, 1.0f);
  std::unique_ptr<SharedMemory> memory_;
};

// Two connections of one process: the second cannot use, unregister or list the first's region.
void ExpectOtherConnectionRefused(const std::string& target, const SharedMemory& memory,
                                  const std::vector<float>& weight) {
  std::unique_ptr<Client> owner = ConnectOwn(target);
  std::unique_ptr<Client> other = ConnectOwn(target);
  ASSERT_NE(owner, nullptr);
  ASSERT_NE(other, nullptr);
  absl::StatusOr<RegisteredRegion> region = owner->RegisterSystemRegion(memory);
  ASSERT_TRUE(region.ok()) << region.status();
  ASSERT_TRUE(other->OpenRegionSession().ok());
  const RegionTensor tensor = region->Tensor(0, DType::kBFloat16, {kRows, kHidden});
  absl::StatusOr<NormalizeResult> used = other->Normalize(tensor, TensorView::Float32(weight));
  EXPECT_EQ(used.status().code(), absl::StatusCode::kPermissionDenied) << used.status();
  EXPECT_TRUE(absl::StrContains(used.status().message(), "input.region.region_id"))
      << used.status();
  NormalizeOptions into_it;
  std::vector<uint16_t> input(kRows * kHidden, 0x3f80);
  into_it.output_region = tensor;
  used = other->Normalize(TensorView::BFloat16(input, {kRows, kHidden}),
                          TensorView::Float32(weight), into_it);
  EXPECT_EQ(used.status().code(), absl::StatusCode::kPermissionDenied) << used.status();
  absl::Status unregistered = other->UnregisterRegion(region->id());
  EXPECT_EQ(unregistered.code(), absl::StatusCode::kPermissionDenied) << unregistered;
  absl::StatusOr<std::vector<normd::v1::RegionInfo>> listed = other->ListRegions();
  ASSERT_TRUE(listed.ok());
  EXPECT_TRUE(listed->empty());
  // The owner is unaffected.
  EXPECT_TRUE(owner->Normalize(tensor, TensorView::Float32(weight)).ok());
}

TEST_F(SharedMemorySecurityTest, AnotherUnixConnectionIsRefused) {
  ExpectOtherConnectionRefused("unix:" + SocketPath(), *memory_, weight_);
}

TEST_F(SharedMemorySecurityTest, AnotherLoopbackConnectionIsRefused) {
  ExpectOtherConnectionRefused(server_->address(), *memory_, weight_);
}

TEST_F(SharedMemorySecurityTest, IdsAreRandomAndUnknownOnesAreNotFound) {
  std::unique_ptr<Client> client = ConnectOwn("unix:" + SocketPath());
  ASSERT_NE(client, nullptr);
  absl::StatusOr<RegisteredRegion> a = client->RegisterSystemRegion(*memory_);
  absl::StatusOr<RegisteredRegion> b = client->RegisterSystemRegion(*memory_);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->id(), b->id());
  for (const std::string& id : {a->id(), b->id()}) {
    EXPECT_EQ(id.size(), 32u);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  }
  RegionTensor guessed{std::string(32, '0'), 0, DType::kBFloat16, {kRows, kHidden}};
  absl::StatusOr<NormalizeResult> result = client->Normalize(guessed, TensorView::Float32(weight_));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound) << result.status();
  EXPECT_EQ(client->UnregisterRegion(guessed.region_id).code(), absl::StatusCode::kNotFound);
}

// The first IPv4 address of this host that is not loopback, or "" when it has none.
std::string NonLoopbackAddress() {
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return "";
  std::string found;
  for (ifaddrs* a = all; a != nullptr && found.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    const uint32_t host = ntohl(in->sin_addr.s_addr);
    if ((host >> 24) == 127) continue;
    found =
        absl::StrCat(host >> 24, ".", (host >> 16) & 255, ".", (host >> 8) & 255, ".", host & 255);
  }
  freeifaddrs(all);
  return found;
}

// A client reaching normd through a non-loopback address is, for normd, on another host.
TEST(SharedMemoryRemoteTest, PeersOffLoopbackArePermissionDenied) {
  const std::string address = NonLoopbackAddress();
  if (address.empty()) GTEST_SKIP() << "this machine has no IPv4 address but loopback";
  NormdProcess server;
  // On every address: the harness checks health over loopback, the client comes through `address`.
  ASSERT_TRUE(server.Start({"--backend=cpu", "--shared-memory=system", "--listen=0.0.0.0:0"}).ok())
      << server.log();
  std::unique_ptr<Client> client = ConnectOwn(absl::StrCat(address, ":", server.port()));
  ASSERT_NE(client, nullptr);
  absl::Status session = client->OpenRegionSession();
  EXPECT_EQ(session.code(), absl::StatusCode::kPermissionDenied) << session;
  EXPECT_TRUE(absl::StrContains(session.message(), "not on this host")) << session;
  absl::StatusOr<std::unique_ptr<SharedMemory>> memory = SharedMemory::Create(4096);
  ASSERT_TRUE(memory.ok());
  absl::StatusOr<RegisteredRegion> region = client->RegisterSystemRegion(**memory);
  EXPECT_EQ(region.status().code(), absl::StatusCode::kPermissionDenied) << region.status();
}

TEST_F(SharedMemorySecurityTest, ObjectsOfAnotherUserAreNotMapped) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give an object to another user";
  const std::string name = absl::StrCat("/normd-test-foreign-", getpid());
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0666);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  ASSERT_EQ(fchown(fd, 65534, 65534), 0);  // nobody
  close(fd);
  std::unique_ptr<Client> client = ConnectOwn("unix:" + SocketPath());
  ASSERT_NE(client, nullptr);
  absl::StatusOr<RegisteredRegion> region = client->RegisterSystemRegion(name, 0, 4096);
  shm_unlink(name.c_str());
  EXPECT_EQ(region.status().code(), absl::StatusCode::kPermissionDenied) << region.status();
  EXPECT_TRUE(absl::StrContains(region.status().message(), "belongs to uid 65534"))
      << region.status();
}

TEST_F(SharedMemorySecurityTest, RegistrationsAreChecked) {
  std::unique_ptr<Client> client = ConnectOwn("unix:" + SocketPath());
  ASSERT_NE(client, nullptr);
  struct Case {
    std::string name;
    int64_t offset, byte_size;
    absl::StatusCode code;
    std::string message;
  } cases[] = {
      {memory_->name(), 0, memory_->size() + 1, absl::StatusCode::kInvalidArgument,
       absl::StrCat("offset 0 + byte_size ", memory_->size() + 1, " is past the end")},
      {memory_->name(), std::numeric_limits<int64_t>::max(), 2, absl::StatusCode::kInvalidArgument,
       "is past the end"},
      {memory_->name(), -1, 16, absl::StatusCode::kInvalidArgument, "offset: -1"},
      {memory_->name(), 0, 0, absl::StatusCode::kInvalidArgument, "byte_size: 0"},
      {"/no-such-normd-object", 0, 16, absl::StatusCode::kNotFound, "cannot open"},
      {"no-slash", 0, 16, absl::StatusCode::kInvalidArgument, "not a POSIX shared-memory name"},
      {"/a/b", 0, 16, absl::StatusCode::kInvalidArgument, "not a POSIX shared-memory name"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<RegisteredRegion> region =
        client->RegisterSystemRegion(c.name, c.offset, c.byte_size);
    EXPECT_EQ(region.status().code(), c.code)
        << c.name << " " << c.offset << " " << c.byte_size << ": " << region.status();
    EXPECT_TRUE(absl::StrContains(region.status().message(), c.message)) << region.status();
  }
}

// Every bad reference, in one table: the field named, the numbers given.
TEST_F(SharedMemorySecurityTest, BadReferencesAreInvalidArgument) {
  std::unique_ptr<Client> client = ConnectOwn("unix:" + SocketPath());
  ASSERT_NE(client, nullptr);
  // A region of 4096 bytes at byte 1024 of the object: its tensors are checked against 4096.
  absl::StatusOr<RegisteredRegion> region =
      client->RegisterSystemRegion(memory_->name(), 1024, 4096);
  ASSERT_TRUE(region.ok()) << region.status();
  const std::string id = region->id();
  auto tensor = [&](int64_t offset) {
    return RegionTensor{id, offset, DType::kBFloat16, {kRows, kHidden}};
  };
  struct Case {
    const char* what;
    RegionTensor input;
    NormalizeOptions options;
    std::string message;
  };
  std::vector<Case> cases;
  cases.push_back(
      {"past the end",
       tensor(4096 - kTensorBytes + 2),
       {},
       absl::StrCat("input.region: offset ", 4096 - kTensorBytes + 2,
                    " + byte_length 512 is past the end of region '", id, "' (4096 bytes)")});
  {
    RegionTensor huge = tensor(std::numeric_limits<int64_t>::max());
    cases.push_back({"offset near INT64_MAX", huge, {}, "is past the end of region"});
  }
  cases.push_back({"negative offset", tensor(-2), {}, "offset -2 and byte_length 512"});
  cases.push_back({"misaligned for bf16", tensor(1), {}, "input.region.offset: 1 puts the tensor"});
  {
    NormalizeOptions options;
    options.output_region = tensor(256);
    cases.push_back({"output overlapping the input", tensor(0), options,
                     "output_region: bytes [256, 768) of region"});
  }
  {
    NormalizeOptions options;
    options.output_region = tensor(1024);
    options.residual_region = tensor(256);
    cases.push_back({"residual overlapping the input", tensor(0), options,
                     "residual.region: bytes [256, 768)"});
  }
  {
    NormalizeOptions options;
    options.residual_out_region = tensor(1024);
    cases.push_back({"residual_out without a residual", tensor(0), options,
                     "residual_out_region: set, but the request has no residual"});
  }
  {
    NormalizeOptions options;
    options.output_region = tensor(1024);
    options.output_region->shape = {kRows, kHidden / 2};
    cases.push_back({"output of the wrong length", tensor(0), options,
                     "output_region.byte_length: 256, but the output (shaped like the input) is "
                     "512 bytes"});
  }
  for (Case& c : cases) {
    absl::StatusOr<NormalizeResult> result =
        client->Normalize(c.input, TensorView::Float32(weight_), c.options);
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument)
        << c.what << ": " << result.status();
    EXPECT_TRUE(absl::StrContains(result.status().message(), c.message))
        << c.what << ": " << result.status();
  }
  // What the client library never sends, through a stub on the client's own connection: a
  // byte_length that disagrees with the shape, and data beside a region.
  auto stub = normd::v1::Normalizer::NewStub(client->channel());
  absl::StatusOr<PreparedRequest> prepared =
      client->Prepare(tensor(0), TensorView::Float32(weight_));
  ASSERT_TRUE(prepared.ok());
  const std::pair<std::function<void(normd::v1::NormalizeRequest&)>, std::string> raw_cases[] = {
      {[](normd::v1::NormalizeRequest& r) {
         r.mutable_input()->mutable_region()->set_byte_length(kTensorBytes - 2);
       },
       "input.region.byte_length: 510 bytes; shape [4, 64] of bfloat16 needs 256 x 2 = 512 bytes"},
      {[](normd::v1::NormalizeRequest& r) { r.mutable_input()->set_data(std::string(8, 'x')); },
       "input: has both data (8 bytes) and region; send one"},
  };
  for (const auto& [mutate, message] : raw_cases) {
    normd::v1::NormalizeRequest request = prepared->proto();
    mutate(request);
    grpc::ClientContext context;
    normd::v1::NormalizeResponse response;
    const grpc::Status status = stub->Normalize(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    EXPECT_TRUE(absl::StrContains(status.error_message(), message)) << status.error_message();
  }
  // Still serving, and the region still works.
  EXPECT_TRUE(client->Normalize(tensor(0), TensorView::Float32(weight_)).ok());
}

TEST(SharedMemoryOffTest, OffByDefault) {
  NormdProcess server;
  ASSERT_TRUE(server.Start({"--backend=cpu"}).ok()) << server.log();
  std::unique_ptr<Client> client = ConnectOwn(server.address());
  ASSERT_NE(client, nullptr);
  absl::Status session = client->OpenRegionSession();
  EXPECT_EQ(session.code(), absl::StatusCode::kFailedPrecondition) << session;
  EXPECT_TRUE(absl::StrContains(session.message(), "--shared-memory")) << session;
  RegionTensor tensor{std::string(32, 'a'), 0, DType::kBFloat16, {kRows, kHidden}};
  absl::StatusOr<NormalizeResult> result =
      client->Normalize(tensor, TensorView::Float32(std::vector<float>(kHidden, 1.0f)));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition) << result.status();
  absl::StatusOr<normd::v1::ServerInfo> info = client->GetServerInfo();
  ASSERT_TRUE(info.ok()) << info.status() << "\n" << server.log();
  EXPECT_EQ(info->shared_memory_size(), 0);
}

}  // namespace
}  // namespace normd::testing
