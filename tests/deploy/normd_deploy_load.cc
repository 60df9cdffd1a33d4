// normd_deploy_load: the deploy suite's load driver. Sends --good valid and --bad invalid Normalize
// calls to a running normd, spread over --spread_ms so that a 1 s scrape sees the counters grow (a
// counter that jumps to its final value before its first sample has a rate of zero), then prints
//   sent=N ok=G invalid_argument=B other=O
// and exits 0 only when every valid call got OK and every invalid one INVALID_ARGUMENT.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "normd/v1/normd.grpc.pb.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "normd's gRPC address");
ABSL_FLAG(int, good, 40, "Valid Normalize calls to send");
ABSL_FLAG(int, bad, 8, "Invalid Normalize calls to send (input bytes that do not match the shape)");
ABSL_FLAG(int, spread_ms, 3000, "Spread the calls evenly over this many milliseconds");

namespace {

constexpr int64_t kRows = 4;
constexpr int64_t kHidden = 256;

normd::v1::Tensor Float32Tensor(const std::vector<int64_t>& shape,
                                const std::vector<float>& values) {
  normd::v1::Tensor t;
  t.set_dtype(normd::v1::DTYPE_FLOAT32);
  for (int64_t d : shape) t.add_shape(d);
  // normd's wire format is little-endian; so is every host this test runs on (x86-64, aarch64).
  std::string bytes(values.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  t.set_data(std::move(bytes));
  return t;
}

normd::v1::NormalizeRequest MakeRequest(int index, bool valid) {
  std::vector<float> input(kRows * kHidden);
  for (size_t i = 0; i < input.size(); ++i)
    input[i] = static_cast<float>((i * 7 + index) % 13) - 6.0f;
  normd::v1::NormalizeRequest request;
  *request.mutable_input() = Float32Tensor({kRows, kHidden}, input);
  *request.mutable_weight() = Float32Tensor({kHidden}, std::vector<float>(kHidden, 1.0f));
  request.set_eps(1e-6f);
  // The mistake a caller most often makes: a shape that does not match the bytes.
  if (!valid) request.mutable_input()->mutable_data()->resize(kRows * kHidden * sizeof(float) - 2);
  return request;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int good = absl::GetFlag(FLAGS_good);
  const int bad = absl::GetFlag(FLAGS_bad);
  const int total = good + bad;
  auto stub = normd::v1::Normalizer::NewStub(
      grpc::CreateChannel(absl::GetFlag(FLAGS_target), grpc::InsecureChannelCredentials()));
  const absl::Duration gap =
      absl::Milliseconds(absl::GetFlag(FLAGS_spread_ms)) / std::max(total, 1);

  // The bad calls are spread evenly among the good ones, as a real caller's mistakes would be.
  std::vector<bool> valid_at(static_cast<size_t>(total), true);
  for (int j = 0; j < bad; ++j) valid_at[static_cast<size_t>(int64_t{j} * total / bad)] = false;

  int ok = 0, invalid_argument = 0, other = 0;
  bool as_expected = true;
  for (int i = 0; i < total; ++i) {
    const bool valid = valid_at[static_cast<size_t>(i)];
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    normd::v1::NormalizeResponse response;
    const grpc::Status status = stub->Normalize(&context, MakeRequest(i, valid), &response);
    if (status.ok()) {
      ++ok;
    } else if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
      ++invalid_argument;
    } else {
      ++other;
      std::fprintf(stderr, "call %d: code %d: %s\n", i, status.error_code(),
                   status.error_message().c_str());
    }
    if (status.ok() != valid) as_expected = false;
    absl::SleepFor(gap);
  }
  std::printf("sent=%d ok=%d invalid_argument=%d other=%d\n", total, ok, invalid_argument, other);
  if (!as_expected || ok != good || invalid_argument != bad) {
    std::fprintf(stderr, "normd_deploy_load: expected ok=%d invalid_argument=%d\n", good, bad);
    return 1;
  }
  return 0;
}
