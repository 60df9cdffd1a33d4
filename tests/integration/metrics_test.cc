// normd's /metrics after a known load with some bad requests: every family exists with its type and
// labels, the counts match what the test sent, and `promtool check metrics` reports nothing.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "normd/v1/normd.grpc.pb.h"
#include "tests/integration/http_get.h"
#include "tests/integration/normd_process.h"
#include "tests/integration/tensor_util.h"
#include "tests/wait_until.h"

namespace normd::testing {
namespace {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value;
};

struct Exposition {
  std::vector<Sample> samples;
  std::map<std::string, std::string> types;  // family name -> counter/gauge/histogram

  // The sum of the samples called `name` whose labels include every one of `labels`.
  double Sum(const std::string& name, const std::map<std::string, std::string>& labels = {}) const {
    double total = 0;
    for (const Sample& s : samples) {
      if (s.name != name) continue;
      bool match = true;
      for (const auto& [k, v] : labels) {
        auto it = s.labels.find(k);
        match &= it != s.labels.end() && it->second == v;
      }
      if (match) total += s.value;
    }
    return total;
  }
  bool Has(const std::string& name) const {
    for (const Sample& s : samples) {
      if (s.name == name) return true;
    }
    return false;
  }
};

Exposition Parse(const std::string& text) {
  Exposition e;
  static const std::regex kType(R"(^# TYPE (\S+) (\S+)$)");
  static const std::regex kSample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+)$)");
  static const std::regex kLabel(R"(([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)\")");
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, kType)) {
      e.types[m[1]] = m[2];
    } else if (std::regex_match(line, m, kSample)) {
      Sample s{m[1], {}, std::stod(m[4])};
      const std::string labels = m[3];
      for (auto it = std::sregex_iterator(labels.begin(), labels.end(), kLabel);
           it != std::sregex_iterator(); ++it) {
        s.labels[(*it)[1]] = (*it)[2];
      }
      e.samples.push_back(std::move(s));
    }
  }
  return e;
}

// The # TYPE a family was declared with, or "" for none.
std::string TypeOf(const Exposition& e, const std::string& family) {
  const auto it = e.types.find(family);
  return it == e.types.end() ? "" : it->second;
}

TEST(MetricsTest, FamiliesAndCountsMatchTheLoadAndPromtoolIsClean) {
  NormdProcess server;
  ASSERT_TRUE(server.Start({"--backend=cpu"}).ok()) << server.log();
  ASSERT_GT(server.metrics_port(), 0) << server.log();
  // Labels differ by backend: the CPU backend's device is "cpu" and its one stage "cpu"; a GPU's
  // device is its index and its compute stage "kernel".
  const bool cpu = TestBackend() == "cpu";
  const std::string device = cpu ? "cpu" : "0";
  const std::string compute_stage = cpu ? "cpu" : "kernel";
  auto stub = normd::v1::Normalizer::NewStub(server.NewChannel());
  std::mt19937 rng(11);
  int64_t payload_in = 0, rows = 0;
  auto normalize = [&](const normd::v1::NormalizeRequest& request) {
    grpc::ClientContext context;
    normd::v1::NormalizeResponse response;
    return stub->Normalize(&context, request, &response);
  };
  for (int i = 0; i < 20; ++i) {
    const auto request = MakeRequest(DType::kBFloat16, 1 + i % 3, 256, i % 2 == 0, rng);
    ASSERT_TRUE(normalize(request).ok());
    payload_in +=
        static_cast<int64_t>(request.input().data().size() + request.residual().data().size());
    rows += 1 + i % 3;
  }
  for (int i = 0; i < 5; ++i) {
    auto request = MakeRequest(DType::kFloat32, 1, 64, false, rng);
    request.set_eps(-1.0f);
    ASSERT_EQ(normalize(request).error_code(), grpc::INVALID_ARGUMENT);
  }
  for (int i = 0; i < 3; ++i) {
    auto request = MakeRequest(DType::kFloat32, 1, 64, false, rng);
    request.set_weight_id("w-unknown");
    ASSERT_EQ(normalize(request).error_code(), grpc::NOT_FOUND);
  }
  {
    normd::v1::RegisterWeightRequest reg;
    *reg.mutable_weight() = MakeTensor(DType::kFloat32, {4}, {1, 2, 3, 4});
    normd::v1::RegisterWeightResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(stub->RegisterWeight(&context, reg, &response).ok());
  }
  {
    grpc::ClientContext context;
    auto stream = stub->NormalizeStream(&context);
    for (int i = 0; i < 7; ++i) {
      const auto request = MakeRequest(DType::kFloat16, 2, 128, false, rng);
      payload_in += static_cast<int64_t>(request.input().data().size());
      rows += 2;
      ASSERT_TRUE(stream->Write(request));
    }
    stream->WritesDone();
    normd::v1::NormalizeResponse response;
    while (stream->Read(&response)) {
    }
    ASSERT_TRUE(stream->Finish().ok());
  }

  absl::StatusOr<std::string> text = HttpGet(server.metrics_port(), "/metrics");
  ASSERT_TRUE(text.ok()) << text.status();
  const Exposition e = Parse(*text);

  const std::map<std::string, std::string> kTypes = {
      {"normd_requests_total", "counter"},
      {"normd_request_duration_seconds", "histogram"},
      {"normd_queue_wait_seconds", "histogram"},
      {"normd_stage_duration_seconds", "histogram"},
      {"normd_batch_rows", "histogram"},
      {"normd_batch_requests", "histogram"},
      {"normd_launches_total", "counter"},
      {"normd_rows_total", "counter"},
      {"normd_bytes_total", "counter"},
      {"normd_kernel_bandwidth_bytes_per_second", "histogram"},
      {"normd_device_copy_bandwidth_bytes_per_second", "gauge"},
      {"normd_queue_depth", "gauge"},
      {"normd_inflight_requests", "gauge"},
      {"normd_pinned_bytes", "gauge"},
      {"normd_device_bytes", "gauge"},
      {"normd_weights_registered", "gauge"},
      {"normd_workers", "gauge"},
      {"normd_build_info", "gauge"},
      {"normd_requests_by_transport_total", "counter"},
      {"normd_shared_memory_sessions", "gauge"},
      {"normd_shared_memory_regions", "gauge"},
      {"normd_shared_memory_bytes", "gauge"}};
  for (const auto& [family, type] : kTypes) {
    auto it = e.types.find(family);
    ASSERT_NE(it, e.types.end()) << family << " missing from:\n" << *text;
    EXPECT_EQ(it->second, type) << family;
  }
  EXPECT_EQ(e.Sum("normd_requests_total", {{"method", "Normalize"}, {"code", "OK"}}), 20);
  EXPECT_EQ(e.Sum("normd_requests_total", {{"method", "Normalize"}, {"code", "INVALID_ARGUMENT"}}),
            5);
  EXPECT_EQ(e.Sum("normd_requests_total", {{"method", "Normalize"}, {"code", "NOT_FOUND"}}), 3);
  EXPECT_EQ(e.Sum("normd_requests_total", {{"method", "RegisterWeight"}, {"code", "OK"}}), 1);
  EXPECT_EQ(e.Sum("normd_requests_total", {{"method", "NormalizeStream"}, {"code", "OK"}}), 7);
  // Every request computed went as bytes; refused ones never reached a worker.
  EXPECT_EQ(e.Sum("normd_requests_by_transport_total", {{"transport", "bytes"}}), 27);
  EXPECT_EQ(e.Sum("normd_requests_by_transport_total", {{"transport", "system"}}), 0);
  EXPECT_EQ(e.Sum("normd_request_duration_seconds_count", {{"method", "Normalize"}}), 28);
  EXPECT_EQ(e.Sum("normd_bytes_total", {{"direction", "in"}}), static_cast<double>(payload_in));
  EXPECT_EQ(e.Sum("normd_bytes_total", {{"direction", "out"}}), static_cast<double>(payload_in));
  // Each worker's warm-up launch (one row) counts too.
  const double workers = e.Sum("normd_workers", {{"state", "ready"}});
  EXPECT_GE(workers, 1);
  EXPECT_EQ(e.Sum("normd_rows_total"), static_cast<double>(rows) + workers);
  EXPECT_GE(e.Sum("normd_launches_total", {{"device", device}}), 1);
  EXPECT_EQ(e.Sum("normd_batch_rows_count"), e.Sum("normd_launches_total"));
  EXPECT_EQ(e.Sum("normd_stage_duration_seconds_count", {{"stage", compute_stage}}),
            e.Sum("normd_launches_total"));
  if (!cpu) {  // the CUDA executor's host side: enqueueing each launch, and waiting for it
    EXPECT_EQ(e.Sum("normd_stage_duration_seconds_count", {{"stage", "submit"}}),
              e.Sum("normd_launches_total"));
    EXPECT_EQ(e.Sum("normd_stage_duration_seconds_count", {{"stage", "wait"}}),
              e.Sum("normd_launches_total"));
  }
  // What the server records after it has answered (a launch's reply stage, the in-flight gauge's
  // decrement) may land just after the client has its response: scrape again until the figure is
  // the one expected (or a generous bound passes, and the last figure seen is reported).
  auto settled = [&](const std::string& family, const std::map<std::string, std::string>& labels,
                     double want) {
    double got = e.Sum(family, labels);
    WaitUntil([&] {
      if (got == want) return true;
      absl::StatusOr<std::string> again = HttpGet(server.metrics_port(), "/metrics");
      if (again.ok()) got = Parse(*again).Sum(family, labels);
      return got == want;
    });
    return got;
  };
  EXPECT_EQ(settled("normd_stage_duration_seconds_count", {{"stage", "reply"}},
                    e.Sum("normd_launches_total")),
            e.Sum("normd_launches_total"));
  EXPECT_GT(e.Sum("normd_kernel_bandwidth_bytes_per_second_count", {{"device", device}}), 0);
  EXPECT_GT(e.Sum("normd_device_copy_bandwidth_bytes_per_second", {{"device", device}}), 0);
  EXPECT_EQ(e.Sum("normd_queue_wait_seconds_count"), 27);  // the requests that reached a worker
  EXPECT_EQ(e.Sum("normd_queue_depth"), 0);
  EXPECT_EQ(settled("normd_inflight_requests", {}, 0), 0);
  EXPECT_EQ(e.Sum("normd_weights_registered"), 1);
  EXPECT_GE(e.Sum("normd_workers", {{"state", "ready"}, {"device", device}}), 1);
  EXPECT_EQ(e.Sum("normd_build_info", {{"backend", TestBackend()}}), 1);
  // The process's own figures, read at scrape time (server/observability/process_metrics.h).
  EXPECT_GT(e.Sum("process_resident_memory_bytes"), 1 << 20);
  EXPECT_EQ(TypeOf(e, "process_resident_memory_bytes"), "gauge");
  EXPECT_GT(e.Sum("process_cpu_seconds_total"), 0);
  EXPECT_EQ(TypeOf(e, "process_cpu_seconds_total"), "counter");
  EXPECT_TRUE(e.Has("normd_allocator_bytes"))
      << "no allocator figures (glibc >= 2.33 has mallinfo2)";
  // A sanitizer's allocator replaces glibc's, whose mallinfo2 then reports zeros.
  if (!kSanitizedBuild) EXPECT_GT(e.Sum("normd_allocator_bytes", {{"state", "in_use"}}), 0);
  // Counts and timings only: nothing of a tensor's bytes or a weight's id reaches the endpoint.
  EXPECT_EQ(text->find("w-float32"), std::string::npos);

  // promtool (Debian's prometheus package, installed by scripts/install-deps.sh) lints the
  // exposition.
  const std::string path = ::testing::TempDir() + "/normd_metrics.txt";
  std::ofstream(path) << *text;
  std::FILE* lint = popen(("promtool check metrics < " + path + " 2>&1").c_str(), "r");
  ASSERT_NE(lint, nullptr);
  std::string lint_output;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, lint)) > 0;) lint_output.append(buf, n);
  const int lint_status = pclose(lint);
  if (WEXITSTATUS(lint_status) == 127 && !cpu) {
    // The GPU machine has no Prometheus packages; CI (CPU backend) runs this lint on the same code.
    std::printf(
        "note: promtool not installed on this machine; the exposition lint was not run here\n");
    return;
  }
  ASSERT_NE(WEXITSTATUS(lint_status), 127)
      << "promtool is not installed: run scripts/install-deps.sh";
  EXPECT_EQ(lint_status, 0) << lint_output;
  EXPECT_EQ(lint_output, "") << lint_output;
}

// The metrics endpoint carries counts and timings, never what clients sent: after requests whose
// tensors, weight and request_id hold recognisable ASCII, none of it appears in /metrics, and every
// label is one of normd's own (no label's value can come from a request).
TEST(MetricsTest, ExpositionCarriesNoTensorDataWeightsOrRequestIds) {
  NormdProcess server;
  ASSERT_TRUE(server.Start({"--backend=cpu"}).ok()) << server.log();
  auto stub = normd::v1::Normalizer::NewStub(server.NewChannel());
  // 16-bit values whose bytes read "tensorsecret0123" (each pair is a finite bf16 value).
  auto ascii_tensor = [](const std::string& text, int64_t rows, int64_t hidden) {
    normd::v1::Tensor t;
    t.set_dtype(normd::v1::DTYPE_BFLOAT16);
    t.add_shape(rows);
    t.add_shape(hidden);
    std::string data;
    while (static_cast<int64_t>(data.size()) < rows * hidden * 2) data += text;
    data.resize(static_cast<size_t>(rows * hidden * 2));
    t.set_data(data);
    return t;
  };
  normd::v1::RegisterWeightRequest reg;
  *reg.mutable_weight() = ascii_tensor("weightsecret4567", 1, 64);
  reg.mutable_weight()->clear_shape();
  reg.mutable_weight()->add_shape(64);
  normd::v1::RegisterWeightResponse reg_response;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub->RegisterWeight(&context, reg, &reg_response).ok());
  }
  for (int i = 0; i < 10; ++i) {
    normd::v1::NormalizeRequest request;
    *request.mutable_input() = ascii_tensor("tensorsecret0123", 2, 64);
    if (i % 2 == 0) {
      *request.mutable_residual() = ascii_tensor("residualsecret89", 2, 64);
      request.set_weight_id(reg_response.weight_id());
    } else {
      *request.mutable_weight() = ascii_tensor("inlineweightsecr", 1, 64);
      request.mutable_weight()->clear_shape();
      request.mutable_weight()->add_shape(64);
    }
    request.set_request_id("requestidsecret-" + std::to_string(i));
    grpc::ClientContext context;
    normd::v1::NormalizeResponse response;
    const grpc::Status status = stub->Normalize(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  absl::StatusOr<std::string> metrics = HttpGet(server.metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  ASSERT_NE(metrics->find("normd_requests_total"), std::string::npos);  // it is the real exposition
  for (const char* secret : {"secret", "tensorsec", "weightsec", "residualsec", "inlineweight",
                             "requestid", reg_response.weight_id().c_str()}) {
    EXPECT_EQ(metrics->find(secret), std::string::npos) << "/metrics contains '" << secret << "'";
  }
  const std::set<std::string> own_labels = {
      "method", "code",    "device",   "stage", "direction", "state",     "backend",
      "cuda",   "version", "quantile", "le",    "source",    "transport", "kind"};
  for (const Sample& sample : Parse(*metrics).samples) {
    for (const auto& [label, value] : sample.labels) {
      EXPECT_TRUE(own_labels.count(label))
          << sample.name << " has a label normd does not define: " << label;
    }
  }
}

}  // namespace
}  // namespace normd::testing
