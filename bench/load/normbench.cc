// normbench: the load generator of normd, after Triton's perf_analyzer. For each load point (a
// concurrency, or a request rate) it warms up, then measures in windows until three consecutive
// windows agree within 10% (or --duration runs out), and reports throughput, latency percentiles,
// errors by code and the server's mean launch size (Timing.batch_requests). With --baseline it
// measures the target and the baseline (normally normd-echo, the transport ceiling) alternately,
// window by window, so that a drift of the machine hits both alike, and prints their throughput
// ratio, over the merged windows and as the median of the window pairs' ratios (the figure to
// quote: run with --stability=0 and a --duration of several windows to get several pairs). A
// point's figures merge its last three windows (--summary-windows=0: every window); --window-csv
// also writes each window's own. Without a baseline the windows are back-to-back slices of one run.
//
//   normbench --target=127.0.0.1:50051 --baseline=127.0.0.1:50052 --concurrency=1,16,64 --rows=1
//             --hidden=4096 --dtype=bf16 --duration=5s --csv=out.csv
//
// --transport=shm or cuda-ipc sends the tensors by reference, in a system or cuda region that each
// connection registers (bench/load/region_load.h), to a normd started with --shared-memory (and
// a baseline normd-echo, which accepts regions without touching them).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "base/command_line.h"
#include "base/mutex.h"
#include "bench/load/load_generator.h"
#include "bench/load/region_load.h"
#include "client/normd_client.h"
#include "client/tls_flags.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "the server measured (normd)");
ABSL_FLAG(std::string, baseline, "", "optional: a second server measured alternately (normd-echo)");
ABSL_FLAG(std::string, concurrency, "1,16,64", "closed loop: requests in flight, a list");
ABSL_FLAG(int64_t, rows, 1, "rows per request");
ABSL_FLAG(int64_t, hidden, 4096, "hidden size (row length)");
ABSL_FLAG(std::string, dtype, "bf16", "bf16, fp16 or fp32");
ABSL_FLAG(bool, residual, false, "send a residual (fused add)");
ABSL_FLAG(bool, weight_id, false, "register the weight once and send its id instead of the weight");
ABSL_FLAG(
    int, connections, 1,
    "connections to each server; unary calls take turns over them (one HTTP/2 connection carries "
    "its calls through one transport: several stand for several client processes)");
ABSL_FLAG(bool, stream, false,
          "pipeline the requests over one NormalizeStream instead of unary calls");
ABSL_FLAG(
    std::string, request_rate, "",
    "open loop instead: requests per second, a list (the concurrency column then holds the mean "
    "number in flight)");
ABSL_FLAG(std::string, arrivals, "poisson", "open loop: poisson or constant");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(5),
          "most measuring time per server and point, in whole windows (rounded up)");
ABSL_FLAG(absl::Duration, window, absl::Seconds(1), "measurement window");
ABSL_FLAG(absl::Duration, warmup, absl::Seconds(1), "load before the first window of each point");
ABSL_FLAG(double, stability, 0.10, "windows agree when each is within this fraction of their mean");
ABSL_FLAG(std::string, csv, "", "write one CSV row per (server, point) here");
ABSL_FLAG(
    int, summary_windows, 3,
    "a point's row merges this many of its last windows (0 = all of them: with --stability=0 and "
    "--duration a multiple of --window, the whole duration)");
ABSL_FLAG(std::string, window_csv, "",
          "also write one CSV row per measured window here (when in a point a latency spike came)");
ABSL_FLAG(uint64_t, seed, 1, "seed of the tensor values and the Poisson arrivals");
ABSL_FLAG(std::string, transport, "bytes",
          "how the tensors travel: bytes (in the messages), shm (a system shared-memory region), "
          "cuda-ipc (GPU memory of normbench's, exported with CUDA IPC); the last two need a "
          "server on this host with --shared-memory");
ABSL_FLAG(int, region_slots, 0,
          "shm, cuda-ipc: requests with their own tensors in the region (0 = the largest "
          "concurrency, or 256 in open loop)");

namespace normd::bench {
namespace {

constexpr char kCsvHeader[] =
    "server,concurrency,rows,hidden,dtype,requests,errors,throughput_rps,rows_per_s,payload_gbps,"
    "p50_us,p90_us,"
    "p95_us,p99_us,mean_batch_requests";
// --window-csv: the point's label (concurrency or request rate), the window's number in the point
// (0 = first), and the seconds measured in the point up to the window's end.
constexpr char kWindowCsvHeader[] =
    "server,point,window,end_s,requests,errors,throughput_rps,p50_us,p99_us";

struct Server {
  std::string role;                              // "target" or "baseline"
  std::vector<std::unique_ptr<Client>> clients;  // one per connection
  std::unique_ptr<RegionLoad> region_load;       // shm, cuda-ipc: after the clients it uses
  std::unique_ptr<LoadGenerator> generator;
  std::vector<WindowStats> windows;
  bool stable = false;
};

struct Point {
  LoadSpec spec;
  std::string label;
};

absl::StatusOr<std::vector<double>> ParseList(const std::string& text, const char* flag) {
  std::vector<double> values;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    double v;
    if (!absl::SimpleAtod(part, &v) || v <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, ": '", part, "' is not a positive number"));
    }
    values.push_back(v);
  }
  if (values.empty()) return absl::InvalidArgumentError(absl::StrCat("--", flag, ": empty"));
  return values;
}

// The request's contents: random N(0,1) activations of the asked shape and dtype.
LoadTensors MakeTensors(DType dtype, uint64_t seed) {
  LoadTensors t;
  t.rows = absl::GetFlag(FLAGS_rows);
  t.hidden = absl::GetFlag(FLAGS_hidden);
  t.dtype = dtype;
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::normal_distribution<float> normal;
  t.input.resize(static_cast<size_t>(t.rows * t.hidden));
  t.residual.resize(t.input.size());
  t.weight.resize(static_cast<size_t>(t.hidden));
  for (float& v : t.input) v = normal(rng);
  for (float& v : t.residual) v = normal(rng);
  for (float& v : t.weight) v = 1.0f + 0.1f * normal(rng);
  if (!absl::GetFlag(FLAGS_residual)) t.residual.clear();
  return t;
}

// The requests every call sends, by client and slot: over the bytes transport one request shared
// by all; over shared memory each slot's own (region_load.h).
absl::StatusOr<RequestTable> MakeRequests(Server& s, Transport transport, DType dtype,
                                          uint64_t seed, int slots) {
  const LoadTensors t = MakeTensors(dtype, seed);
  Client& first = *s.clients.front();
  std::optional<Weight> registered;
  if (absl::GetFlag(FLAGS_weight_id)) {
    absl::StatusOr<Weight> weight = first.RegisterWeight(TensorView::Float32(t.weight));
    if (!weight.ok()) return weight.status();
    registered = *std::move(weight);
  }
  const WeightSource weight =
      registered ? WeightSource(*registered) : WeightSource(TensorView::Float32(t.weight));
  if (transport != Transport::kBytes) {
    std::vector<Client*> clients;
    for (auto& c : s.clients) clients.push_back(c.get());
    absl::StatusOr<std::unique_ptr<RegionLoad>> load =
        MakeRegionLoad(transport, clients, slots, t, weight);
    if (!load.ok()) return load.status();
    s.region_load = *std::move(load);
    return s.region_load->requests;
  }
  NormalizeOptions options;
  options.wire_dtype = dtype;
  if (!t.residual.empty()) options.residual = TensorView::Float32(t.residual, {t.rows, t.hidden});
  absl::StatusOr<PreparedRequest> prepared =
      first.Prepare(TensorView::Float32(t.input, {t.rows, t.hidden}), weight, options);
  if (!prepared.ok()) return prepared.status();
  return RequestTable{{std::make_shared<const PreparedRequest>(*std::move(prepared))}};
}

// Opens `path` for writing with `header` as its first line; an empty path means no file (true,
// `out` left closed). False, with a message, when it cannot be written.
bool OpenCsv(const std::string& path, const char* header, std::ofstream& out) {
  if (path.empty()) return true;
  out.open(path, std::ios::trunc);
  if (!out) {
    std::cerr << "normbench: cannot write " << path << "\n";
    return false;
  }
  out << header << "\n";
  return true;
}

// Sleeps for `d`; on a terminal, keeps a one-line progress display up to date meanwhile.
void SleepWithProgress(absl::Duration d, Server& server, const Point& point, const char* phase,
                       bool tty) {
  const absl::Time end = absl::Now() + d;
  const absl::Time start = absl::Now();
  while (absl::Now() < end) {
    absl::SleepFor(std::min(absl::Milliseconds(200), end - absl::Now()));
    if (!tty) continue;
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    std::printf("\r\033[K  %-8s %-14s %-7s window %zu  %10.0f req/s", server.role.c_str(),
                point.label.c_str(), phase, server.windows.size() + 1,
                seconds > 0 ? static_cast<double>(server.generator->PeekOk()) / seconds : 0.0);
    std::fflush(stdout);
  }
}

// Measures one server's next window at `point`. The first window of a point follows the warm-up.
// With a baseline the generator stops while the other server is measured, so later windows follow a
// short settle; alone (`alone`) it keeps running, and the windows are back-to-back slices of one
// run (the caller stops it after the point).
void MeasureWindow(Server& s, const Point& point, bool first, bool alone, bool tty) {
  if (first || !alone) {
    s.generator->Start(point.spec);
    SleepWithProgress(first ? absl::GetFlag(FLAGS_warmup) : absl::Milliseconds(100), s, point,
                      "warm-up", tty);
    s.generator->Collect();
  }
  SleepWithProgress(absl::GetFlag(FLAGS_window), s, point, "measure", tty);
  WindowStats w = s.generator->Collect();
  if (!alone) s.generator->Stop();
  s.windows.push_back(std::move(w));
  s.stable = LastThreeAgree(s.windows, absl::GetFlag(FLAGS_stability));
}

struct Summary {
  WindowStats merged;
  double rps = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0;
};

Summary Summarize(const Server& s) {
  Summary out;
  const int last = absl::GetFlag(FLAGS_summary_windows);
  const size_t n = last == 0 ? s.windows.size() : std::min<size_t>(last, s.windows.size());
  for (size_t i = s.windows.size() - n; i < s.windows.size(); ++i) out.merged.Merge(s.windows[i]);
  out.rps = out.merged.throughput_rps();
  out.p50 = out.merged.Percentile(0.50);
  out.p90 = out.merged.Percentile(0.90);
  out.p95 = out.merged.Percentile(0.95);
  out.p99 = out.merged.Percentile(0.99);
  return out;
}

int Run(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "normbench: load generator for normd (closed-loop concurrency sweeps or open-loop request "
      "rates).");
  const std::vector<std::string> rest = ParseCommandLineWithDashes(argc, argv);
  if (rest.size() > 1) {
    std::cerr << "normbench: unexpected argument '" << rest[1] << "' (see --help)\n";
    return 2;
  }
  absl::StatusOr<DType> dtype = ParseDType(absl::GetFlag(FLAGS_dtype));
  const std::string arrivals = absl::GetFlag(FLAGS_arrivals);
  if (!dtype.ok() || (arrivals != "poisson" && arrivals != "constant") ||
      absl::GetFlag(FLAGS_rows) <= 0 || absl::GetFlag(FLAGS_hidden) <= 0 ||
      absl::GetFlag(FLAGS_window) <= absl::ZeroDuration() ||
      absl::GetFlag(FLAGS_duration) <= absl::ZeroDuration() ||
      absl::GetFlag(FLAGS_summary_windows) < 0) {
    std::cerr
        << "normbench: need --dtype=bf16|fp16|fp32, --arrivals=poisson|constant, positive --rows, "
           "--hidden, --window, --duration, and --summary-windows >= 0\n";
    return 2;
  }
  std::vector<Point> points;
  const bool open_loop = !absl::GetFlag(FLAGS_request_rate).empty();
  absl::StatusOr<std::vector<double>> values =
      open_loop ? ParseList(absl::GetFlag(FLAGS_request_rate), "request_rate")
                : ParseList(absl::GetFlag(FLAGS_concurrency), "concurrency");
  if (!values.ok()) {
    std::cerr << "normbench: " << values.status().message() << "\n";
    return 2;
  }
  for (double v : *values) {
    Point p;
    p.spec.stream = absl::GetFlag(FLAGS_stream);
    p.spec.poisson = arrivals == "poisson";
    if (open_loop) {
      p.spec.request_rate = v;
      p.label = absl::StrCat("rate=", v);
    } else {
      p.spec.concurrency = static_cast<int>(v);
      p.label = absl::StrCat("c=", p.spec.concurrency);
    }
    points.push_back(p);
  }

  absl::StatusOr<Transport> transport = ParseTransport(absl::GetFlag(FLAGS_transport));
  if (!transport.ok()) {
    std::cerr << "normbench: " << transport.status().message() << "\n";
    return 2;
  }
  int slots = absl::GetFlag(FLAGS_region_slots);
  if (slots <= 0) {
    slots = open_loop ? 256 : 1;
    for (const Point& p : points) slots = std::max(slots, p.spec.concurrency);
  }
  const int connection_count = absl::GetFlag(FLAGS_connections);
  if (connection_count < 1 || connection_count > 1024) {
    std::cerr << "normbench: --connections = " << connection_count << ": expected 1 to 1024\n";
    return 2;
  }
  std::vector<Server> servers;
  for (const auto& [role, address] :
       {std::pair<std::string, std::string>{"target", absl::GetFlag(FLAGS_target)},
        {"baseline", absl::GetFlag(FLAGS_baseline)}}) {
    if (address.empty()) continue;
    ClientOptions options;
    options.target = address;
    options.own_connection = true;
    options.tls = ClientTlsOptionsFromFlags();
    Server s;
    s.role = role;
    std::vector<Client*> connections;
    for (int i = 0; i < connection_count; ++i) {
      absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
      if (!client.ok()) {
        std::cerr << "normbench: " << role << ": " << client.status().message() << "\n";
        return 2;
      }
      connections.push_back(client->get());
      s.clients.push_back(*std::move(client));
    }
    absl::StatusOr<RequestTable> requests =
        MakeRequests(s, *transport, *dtype, absl::GetFlag(FLAGS_seed), slots);
    if (!requests.ok()) {
      std::cerr << "normbench: " << role << " (" << address << "): " << requests.status() << "\n";
      return 4;
    }
    s.generator = std::make_unique<LoadGenerator>(std::move(connections), *std::move(requests),
                                                  absl::GetFlag(FLAGS_seed));
    servers.push_back(std::move(s));
  }

  std::ofstream csv, window_csv;
  if (!OpenCsv(absl::GetFlag(FLAGS_csv), kCsvHeader, csv) ||
      !OpenCsv(absl::GetFlag(FLAGS_window_csv), kWindowCsvHeader, window_csv)) {
    return 3;
  }
  const bool tty = isatty(STDOUT_FILENO) != 0;
  const int64_t rows = absl::GetFlag(FLAGS_rows), hidden = absl::GetFlag(FLAGS_hidden);
  const std::string dtype_name = absl::GetFlag(FLAGS_dtype);
  std::printf("%-8s %-14s %5s %6s %-5s %9s %6s %11s %11s %8s %8s %8s %8s %8s %6s %s\n", "server",
              "point", "rows", "hidden", "dtype", "requests", "errors", "req/s", "rows/s", "GB/s",
              "p50_us", "p90_us", "p95_us", "p99_us", "batch", "stable");
  // A point gets at most this many windows per server. Counted by the window rather than by the
  // time each took, so that a window that overran (a slow or busy machine sleeps late) does not
  // cost the point one of its windows: --duration=0.6s --window=0.2s always means up to three.
  const size_t max_windows = static_cast<size_t>(
      std::ceil(absl::FDivDuration(absl::GetFlag(FLAGS_duration), absl::GetFlag(FLAGS_window))));
  bool any_ok = false;
  for (const Point& point : points) {
    for (Server& s : servers) {
      s.windows.clear();
      s.stable = false;
    }
    // Alternate window by window until every server is stable or out of time.
    const bool alone = servers.size() == 1;
    for (bool first = true;; first = false) {
      bool measured_any = false;
      for (Server& s : servers) {
        if (s.stable || s.windows.size() >= max_windows) continue;
        MeasureWindow(s, point, first, alone, tty);
        measured_any = true;
      }
      if (!measured_any) break;
    }
    if (alone) servers[0].generator->Stop();
    if (tty) std::printf("\r\033[K");
    std::vector<double> rps;
    for (Server& s : servers) {
      if (window_csv.is_open()) {
        absl::Duration end;
        for (size_t i = 0; i < s.windows.size(); ++i) {
          WindowStats& w = s.windows[i];
          end += w.length;
          window_csv << absl::StrFormat("%s,%s,%d,%.3f,%d,%d,%.1f,%.0f,%.0f\n", s.role, point.label,
                                        i, absl::ToDoubleSeconds(end), w.ok(), w.error_count(),
                                        w.throughput_rps(), w.Percentile(0.50), w.Percentile(0.99));
        }
      }
      Summary sum = Summarize(s);
      const double rows_per_s = sum.rps * static_cast<double>(rows);
      // Tensor bytes both ways: input (+ residual) in, output (+ residual_out) out.
      const double tensor_bytes = static_cast<double>(rows * hidden) *
                                  static_cast<double>(ItemSize(*dtype)) *
                                  (absl::GetFlag(FLAGS_residual) ? 2.0 : 1.0);
      const double gbps = sum.rps * 2.0 * tensor_bytes / 1e9;
      const double concurrency = point.spec.request_rate > 0
                                     ? sum.rps * sum.merged.mean_latency_us() / 1e6
                                     : point.spec.concurrency;
      std::printf(
          "%-8s %-14s %5lld %6lld %-5s %9lld %6lld %11.1f %11.1f %8.3f %8.0f %8.0f %8.0f %8.0f "
          "%6.2f %s\n",
          s.role.c_str(), point.label.c_str(), static_cast<long long>(rows),
          static_cast<long long>(hidden), dtype_name.c_str(),
          static_cast<long long>(sum.merged.ok()), static_cast<long long>(sum.merged.error_count()),
          sum.rps, rows_per_s, gbps, sum.p50, sum.p90, sum.p95, sum.p99,
          sum.merged.mean_batch_requests(), s.stable ? "yes" : "no");
      if (sum.merged.error_count() > 0)
        std::printf("         errors: %s\n", ErrorsByCode(sum.merged).c_str());
      if (csv.is_open()) {
        csv << absl::StrFormat("%s,%.0f,%d,%d,%s,%d,%d,%.1f,%.1f,%.4f,%.0f,%.0f,%.0f,%.0f,%.3f\n",
                               s.role, concurrency, rows, hidden, dtype_name, sum.merged.ok(),
                               sum.merged.error_count(), sum.rps, rows_per_s, gbps, sum.p50,
                               sum.p90, sum.p95, sum.p99, sum.merged.mean_batch_requests());
      }
      any_ok |= sum.merged.ok() > 0;
      rps.push_back(sum.rps);
    }
    if (servers.size() == 2) {  // a target and its baseline
      if (rps[1] > 0) {
        std::printf("         %s: throughput target/baseline = %.3f\n", point.label.c_str(),
                    rps[0] / rps[1]);
      }
      const PairedRatios paired = PairWindowRatios(servers[0].windows, servers[1].windows);
      if (paired.pairs > 0) {
        std::printf("         %s: window pairs target/baseline: median %.3f of %d (%.3f-%.3f)\n",
                    point.label.c_str(), paired.median, paired.pairs, paired.min, paired.max);
      }
    }
    std::fflush(stdout);
  }
  return any_ok ? 0 : 1;
}

}  // namespace
}  // namespace normd::bench

int main(int argc, char** argv) {
  normd::TurnOffMutexDeadlockDetection();  // see base/mutex.h: the load generator's own gRPC calls
                                           // pay it too
  return normd::bench::Run(argc, argv);
}
