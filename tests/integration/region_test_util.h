// Helpers of the shared-memory suites: a client on a chosen target, a socket path per test,
// random bf16 data, a reference computed over the bytes transport, and /metrics samples.
#ifndef NORMD_TESTS_INTEGRATION_REGION_TEST_UTIL_H_
#define NORMD_TESTS_INTEGRATION_REGION_TEST_UTIL_H_

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/normd_client.h"
#include "tests/integration/suite_normd.h"
#include "tests/wait_until.h"

namespace normd::testing {

// A fresh Unix socket path for a normd of this test process ("/tmp/normd-<tag>-<pid>-<n>.sock").
std::string UnixSocketPath(const std::string& tag);

// A client with a connection of its own to `target` (regions belong to one connection), no
// retries (a test sees each failure as it happened).
std::unique_ptr<Client> ConnectOwn(const std::string& target);

// Random N(0,1) values rounded to bf16, written into `out`.
void FillBf16(std::span<uint16_t> out, std::mt19937& rng);

// The output (and residual_out) normd computes for these bf16 rows over the bytes transport: the
// reference a region request must match bit for bit (the same kernels compute both).
struct InlineResult {
  std::string output;
  std::string residual_out;
};
absl::StatusOr<InlineResult> ComputeInline(Client& client, std::span<const uint16_t> input,
                                           std::span<const uint16_t> residual,
                                           std::span<const float> weight, int64_t rows,
                                           int64_t hidden);

// The value of the sample `series` (a name with its labels as exposed, e.g.
// `normd_shared_memory_regions{kind="system"}`) on normd's /metrics, or an error.
absl::StatusOr<double> MetricSample(int metrics_port, const std::string& series);
// Waits until that sample equals `value` (WaitUntil's polling); true once it does.
bool WaitForMetric(int metrics_port, const std::string& series, double value,
                   absl::Duration timeout = kGenerousWait);

// A suite sharing one normd with shared memory on, served on a Unix socket of its own as well as
// loopback. The suite names its socket with `static constexpr char kTag[]`; one that needs other
// flags declares its own SuiteFlags (with SocketPath()'s socket).
template <typename Suite>
class RegionSuiteTest : public SuiteNormdTest<Suite> {
 public:
  static const std::string& SocketPath() {
    static const std::string path = UnixSocketPath(Suite::kTag);
    return path;
  }
  static std::vector<std::string> SuiteFlags() {
    return {"--backend=cpu", "--shared-memory=system", "--listen-unix=" + SocketPath()};
  }
};

}  // namespace normd::testing

#endif  // NORMD_TESTS_INTEGRATION_REGION_TEST_UTIL_H_
