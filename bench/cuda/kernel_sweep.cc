// The sweep behind the choice tables (kernel_sweep.h).
#include "bench/cuda/kernel_sweep.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "bench/cuda/bench_util.h"
#include "bench/cuda/device_timer.h"
#include "kernels/cuda/kernel_config.h"
#include "kernels/cuda/rmsnorm_cuda.h"

namespace normd::bench {
namespace {

using cuda::internal::Describe;
using cuda::internal::KernelConfig;
using cuda::internal::KernelKind;

struct Point {
  int tier;
  DType dtype;
  bool residual;
  bool fp32_weights;
  int64_t hidden;
  int64_t rows;
};

struct Timed {
  KernelConfig config;
  double us;
};

struct PointResult {
  Point point;
  bool vector;
  std::vector<Timed> timed;  // every candidate
  KernelConfig default_config;
  double copy_us = 0;
};

const char* DTypeShort(DType d) {
  return d == DType::kFloat32 ? "fp32" : d == DType::kFloat16 ? "fp16" : "bf16";
}

const char* KindName(KernelKind k) {
  switch (k) {
    case KernelKind::kRows:
      return "rows";
    case KernelKind::kReload:
      return "reload";
    case KernelKind::kLoop:
      return "loop";
    case KernelKind::kCluster:
      return "cluster";
  }
  return "?";
}

constexpr int64_t kRowCounts[] = {1, 8, 64, 512, 2048, 8192, 32768, 131072};
constexpr int64_t kCoarseHidden[] = {128,   256,   384,   512,   768,   1024,  1536,  2048,
                                     2560,  3072,  4096,  5120,  6144,  7168,  8192,  10240,
                                     12288, 14336, 16384, 20480, 24576, 32768, 49152, 65536};
// Primes, and 4100 (not whole 16-bit vectors): the element path, odd remainders.
constexpr int64_t kOddHidden[] = {127, 1031, 2053, 3001, 4100, 5003, 8191, 12289, 16411, 30011};

std::vector<Point> BuildGrid(int max_tier, bool quick) {
  std::vector<std::vector<Point>> tiers(4);
  for (const DType d : {DType::kBFloat16, DType::kFloat32}) {
    for (const bool residual : {false, true}) {
      for (const int64_t rows : kRowCounts) {
        for (const int64_t h : kCoarseHidden) tiers[0].push_back({0, d, residual, false, h, rows});
        for (const int64_t h : kOddHidden) tiers[1].push_back({1, d, residual, false, h, rows});
        for (int64_t h = 128; h <= 65536; h += h < 16384 ? 128 : 1024) {
          if (std::find(std::begin(kCoarseHidden), std::end(kCoarseHidden), h) !=
              std::end(kCoarseHidden)) {
            continue;
          }
          tiers[3].push_back({3, d, residual, false, h, rows});
        }
      }
    }
  }
  for (const bool residual : {false, true}) {
    for (const int64_t rows : kRowCounts) {
      for (const int64_t h : kCoarseHidden) {
        tiers[2].push_back({2, DType::kBFloat16, residual, true, h, rows});
      }
      for (const int64_t h : {1024, 4096, 8192, 16384}) {
        tiers[2].push_back({2, DType::kFloat16, residual, false, h, rows});
      }
    }
  }
  std::mt19937_64 rng(20240601);
  std::vector<Point> grid;
  for (int t = 0; t <= std::min(max_tier, 3); ++t) {
    std::shuffle(tiers[t].begin(), tiers[t].end(), rng);
    if (quick) tiers[t].resize(std::min<size_t>(tiers[t].size(), 6));
    grid.insert(grid.end(), tiers[t].begin(), tiers[t].end());
  }
  return grid;
}

// The device data of one point: rotation sets of x, r, y, residual_out cut from the pools.
class PointData {
 public:
  PointData(const Point& p, DevicePool* pools[4], const DeviceWeights& weights)
      : p_(p), weights_(weights) {
    for (int i = 0; i < 4; ++i) pools_[i] = pools[i];
    tensor_bytes_ = p.rows * p.hidden * static_cast<int64_t>(ItemSize(p.dtype));
    stride_ = (tensor_bytes_ + 255) / 256 * 256;
    const int64_t footprint = tensor_bytes_ * (p.residual ? 4 : 2);
    const int64_t fit = static_cast<int64_t>(pools[0]->bytes()) / std::max<int64_t>(stride_, 1);
    sets_ = RotationSets(footprint, static_cast<int>(std::min<int64_t>(fit, 1024)));
  }

  int sets() const { return sets_; }
  int64_t footprint() const { return tensor_bytes_ * (p_.residual ? 4 : 2); }

  RmsNormSegment Segment(int set) const {
    const int64_t at = (set % sets_) * stride_;
    RmsNormSegment s;
    s.input = pools_[0]->data() + at;
    s.output = pools_[2]->data() + at;
    if (p_.residual) {
      s.residual = pools_[1]->data() + at;
      s.residual_out = pools_[3]->data() + at;
    }
    s.weight_dtype = p_.fp32_weights ? DType::kFloat32 : p_.dtype;
    s.weight = weights_.For(s.weight_dtype);
    s.rows = p_.rows;
    s.eps = 1e-6f;
    return s;
  }

  // The same bytes moved by one copy per tensor (x to y, and r to residual_out).
  cudaError_t Copy(int set, cudaStream_t stream) const {
    const RmsNormSegment s = Segment(set);
    cudaError_t e = cudaMemcpyAsync(s.output, s.input, static_cast<size_t>(tensor_bytes_),
                                    cudaMemcpyDeviceToDevice, stream);
    if (e == cudaSuccess && p_.residual) {
      e = cudaMemcpyAsync(s.residual_out, s.residual, static_cast<size_t>(tensor_bytes_),
                          cudaMemcpyDeviceToDevice, stream);
    }
    return e;
  }

 private:
  Point p_;
  const DeviceWeights& weights_;
  DevicePool* pools_[4];
  int64_t tensor_bytes_ = 0;
  int64_t stride_ = 0;
  int sets_ = 1;
};

cuda::internal::LaunchTraits TraitsFor(const Point& p) {
  cuda::internal::LaunchTraits t;
  t.dtype = p.dtype;
  t.hidden = p.hidden;
  t.rows = p.rows;
  t.residual = p.residual;
  t.fp32_weights = p.fp32_weights;
  t.alignment = (p.hidden * static_cast<int64_t>(ItemSize(p.dtype))) % 16 == 0
                    ? cuda::internal::Alignment::kVector
                    : cuda::internal::Alignment::kElement;
  return t;
}

constexpr int kReplays = 5;

double TimeConfig(const PointData& data, const Point& p, const KernelConfig& config, int calls,
                  cudaStream_t stream) {
  cuda::internal::LaunchOverrides overrides;
  overrides.config = &config;
  return GraphTimeUs(
      [&](int set, cudaStream_t s) {
        return cuda::internal::RmsNormWith(p.dtype, p.hidden, data.Segment(set), s, {}, overrides);
      },
      calls, kReplays, stream);
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

const Timed* Best(const PointResult& r) {
  const Timed* best = nullptr;
  for (const Timed& t : r.timed) {
    if (best == nullptr || t.us < best->us) best = &t;
  }
  return best;
}

const Timed* Find(const PointResult& r, const KernelConfig& c) {
  for (const Timed& t : r.timed) {
    if (t.config == c) return &t;
  }
  return nullptr;
}

// The table's configuration at a point: the fastest, unless the default configuration is within
// `band` of it (a gain inside the noise band is not a reason to leave the principled default).
const Timed* Chosen(const PointResult& r, double band) {
  const Timed* best = Best(r);
  const Timed* by_default = Find(r, r.default_config);
  if (best != nullptr && by_default != nullptr && by_default->us <= best->us * (1.0 + band)) {
    return by_default;
  }
  return best;
}

// What the table's header says of the GPU the measurements came from.
struct DeviceNote {
  std::string name;
  int sm = 0;
  int multiprocessors = 0;
};

void WriteMeasurements(const std::string& path, const std::vector<PointResult>& results,
                       const DeviceNote& device, double band) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::perror(path.c_str());
    return;
  }
  std::fprintf(f, "# device %s\n# sm %d\n# multiprocessors %d\n# band %.5f\n", device.name.c_str(),
               device.sm, device.multiprocessors, band);
  std::fprintf(f, "tier,dtype,residual,weights,path,hidden,rows,config,us,copy_us,bytes\n");
  for (const PointResult& r : results) {
    const Point& p = r.point;
    const int64_t bytes =
        p.rows * p.hidden * static_cast<int64_t>(ItemSize(p.dtype)) * (p.residual ? 4 : 2);
    for (const Timed& t : r.timed) {
      std::fprintf(f, "%d,%s,%d,%s,%s,%lld,%lld,%s,%.4f,%.4f,%lld\n", p.tier, DTypeShort(p.dtype),
                   p.residual ? 1 : 0, p.fp32_weights ? "fp32" : "input",
                   r.vector ? "vector" : "element", static_cast<long long>(p.hidden),
                   static_cast<long long>(p.rows), Describe(t.config).c_str(), t.us, r.copy_us,
                   static_cast<long long>(bytes));
    }
  }
  std::fclose(f);
}

void WriteTable(const std::string& path, const std::vector<PointResult>& results, double band,
                const std::string& command, const DeviceNote& device, const std::string& note) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::perror(path.c_str());
    return;
  }
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  std::fprintf(f,
               "# Kernel choice table for sm_%d, measured on %s (%d multiprocessors), written %s.\n"
               "# Regenerate on such a GPU: %s%s\n"
               "# config: the choice at the point (the fastest configuration timed there, or the\n"
               "# default configuration where it was within the noise band, %.1f%%, of the\n"
               "# fastest); us: its kernel time (CUDA graph replay, inputs rotated past L2);\n"
               "# best_us, next_us: the fastest and the fastest other configuration; default_us:\n"
               "# DefaultConfig's time; copy_us: a device copy of the same bytes.\n",
               device.sm, device.name.c_str(), device.multiprocessors, date, command.c_str(),
               note.c_str(), 100.0 * band);
  std::fprintf(f,
               "dtype,residual,weights,path,hidden,rows,config,us,best_us,next_us,default_us,"
               "copy_us\n");
  std::vector<const PointResult*> sorted;
  for (const PointResult& r : results) {
    if (r.point.dtype != DType::kFloat16 && !r.timed.empty()) sorted.push_back(&r);
  }
  std::sort(sorted.begin(), sorted.end(), [](const PointResult* a, const PointResult* b) {
    const Point &x = a->point, &y = b->point;
    return std::make_tuple(static_cast<int>(x.dtype), x.residual, x.fp32_weights, x.hidden,
                           x.rows) <
           std::make_tuple(static_cast<int>(y.dtype), y.residual, y.fp32_weights, y.hidden, y.rows);
  });
  for (const PointResult* r : sorted) {
    const Point& p = r->point;
    const Timed* chosen = Chosen(*r, band);
    const Timed* best = Best(*r);
    double next = 0;
    for (const Timed& t : r->timed) {
      if (t.config != best->config && (next == 0 || t.us < next)) next = t.us;
    }
    const Timed* by_default = Find(*r, r->default_config);
    std::fprintf(f, "%s,%d,%s,%s,%lld,%lld,%s,%.3f,%.3f,%.3f,%.3f,%.3f\n", DTypeShort(p.dtype),
                 p.residual ? 1 : 0, p.fp32_weights ? "fp32" : "input",
                 r->vector ? "vector" : "element", static_cast<long long>(p.hidden),
                 static_cast<long long>(p.rows), Describe(chosen->config).c_str(), chosen->us,
                 best->us, next, by_default != nullptr ? by_default->us : 0.0, r->copy_us);
  }
  std::fclose(f);
}

// Which kernels earn their place: per kind, the points where its best configuration beats the
// best of every other kind by more than 2%.
void PrintKindSummary(const std::vector<PointResult>& results) {
  std::map<KernelKind, int> wins, chosen_best;
  int points = 0;
  for (const PointResult& r : results) {
    if (r.timed.empty()) continue;
    ++points;
    std::map<KernelKind, double> best_of;
    for (const Timed& t : r.timed) {
      auto it = best_of.find(t.config.kind);
      if (it == best_of.end() || t.us < it->second) best_of[t.config.kind] = t.us;
    }
    for (const auto& [kind, us] : best_of) {
      double others = 0;
      for (const auto& [k2, us2] : best_of) {
        if (k2 != kind && (others == 0 || us2 < others)) others = us2;
      }
      if (others > 0 && us * 1.02 < others) ++wins[kind];
    }
    ++chosen_best[Best(r)->config.kind];
  }
  std::printf("# kinds over %d points: fastest at / ahead of every other kind by > 2%% at\n",
              points);
  for (const KernelKind k :
       {KernelKind::kRows, KernelKind::kReload, KernelKind::kLoop, KernelKind::kCluster}) {
    std::printf("#   %-8s %5d / %5d\n", KindName(k), chosen_best[k], wins[k]);
  }
}

}  // namespace

int RunSweep(const SweepOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  int device = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  cudaDeviceProp prop = {};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  const cuda::internal::DeviceFeatures features = cuda::internal::CurrentDeviceFeatures();
  std::printf("# %s sm_%d%d, %d multiprocessors, L2 %d MB, clusters %s\n", prop.name, prop.major,
              prop.minor, prop.multiProcessorCount, prop.l2CacheSize >> 20,
              features.clusters ? "yes" : "no");
  const size_t pool_bytes = static_cast<size_t>(options.max_tensor_mib) << 20;
  DevicePool x(pool_bytes, 1), r(pool_bytes, 2), y(pool_bytes, 3), ro(pool_bytes, 4);
  DevicePool* pools[4] = {&x, &r, &y, &ro};
  const DeviceWeights weights;
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  std::vector<Point> grid;
  for (const Point& p : BuildGrid(options.max_tier, options.quick)) {
    if (p.hidden >= options.hidden_min && p.rows >= options.rows_min) grid.push_back(p);
  }
  const DeviceNote note{prop.name, prop.major * 10 + prop.minor, prop.multiProcessorCount};
  const double timing_budget = options.budget_s * (1.0 - options.noise_fraction);
  std::vector<PointResult> results;
  std::map<int, int> planned, done, capped;
  int64_t mismatches = 0, timings = 0;
  for (const Point& p : grid) ++planned[p.tier];
  for (const Point& p : grid) {
    if (Seconds(start) > timing_budget) break;
    if (p.rows * p.hidden * static_cast<int64_t>(ItemSize(p.dtype)) >
        static_cast<int64_t>(pool_bytes)) {
      ++capped[p.tier];
      continue;
    }
    const PointData data(p, pools, weights);
    const cuda::internal::LaunchTraits traits = TraitsFor(p);
    PointResult result;
    result.point = p;
    result.vector = traits.alignment == cuda::internal::Alignment::kVector;
    result.default_config = cuda::internal::ResolveShape(
                                cuda::internal::DefaultConfig(traits, features), traits, features)
                                .config;
    const double expected_us = static_cast<double>(data.footprint()) / 3.5e6 + 2.0;
    const int calls = CallsFor(expected_us, data.sets());
    result.copy_us = GraphTimeUs([&](int set, cudaStream_t s) { return data.Copy(set, s); }, calls,
                                 kReplays, stream);
    for (const KernelConfig& config : cuda::internal::CandidateConfigs(traits, features)) {
      const double us = TimeConfig(data, p, config, calls, stream);
      ++timings;
      const std::string what = std::string(DTypeShort(p.dtype)) + (p.residual ? " fused" : "") +
                               (p.fp32_weights ? " fp32w" : "") + " " + std::to_string(p.rows) +
                               "x" + std::to_string(p.hidden) + " " + Describe(config);
      mismatches += CheckRowsOnDevice(p.dtype, p.hidden, data.Segment(0), what.c_str());
      result.timed.push_back({config, us});
    }
    ++done[p.tier];
    results.push_back(std::move(result));
  }

  // The noise band: the fastest and the runner-up of random points timed again.
  std::vector<double> spread;
  std::mt19937_64 rng(7);
  while (!results.empty() && Seconds(start) < options.budget_s) {
    PointResult& again = results[rng() % results.size()];
    const Point& p = again.point;
    std::vector<Timed> order = again.timed;
    std::sort(order.begin(), order.end(),
              [](const Timed& a, const Timed& b) { return a.us < b.us; });
    const PointData data(p, pools, weights);
    const int calls = CallsFor(static_cast<double>(data.footprint()) / 3.5e6 + 2.0, data.sets());
    for (size_t i = 0; i < std::min<size_t>(2, order.size()); ++i) {
      const double us = TimeConfig(data, p, order[i].config, calls, stream);
      spread.push_back(std::fabs(us / order[i].us - 1.0));
    }
  }
  const double band = std::max(options.min_gain, Quantile(spread, 0.9));

  if (!options.measurements_csv.empty()) {
    WriteMeasurements(options.measurements_csv, results, note, band);
  }
  if (!options.table_csv.empty()) {
    WriteTable(options.table_csv, results, band, options.command, note, "");
  }

  // The summary, last.
  std::printf("# sweep: %.0f s, %lld configurations timed at %zu points, %lld mismatches\n",
              Seconds(start), static_cast<long long>(timings), results.size(),
              static_cast<long long>(mismatches));
  for (const auto& [tier, n] : planned) {
    std::printf("#   tier %d: %d of %d points timed, %d over the tensor cap\n", tier, done[tier], n,
                capped[tier]);
  }
  std::printf(
      "# noise: %zu re-timings, |repeat / first - 1| median %.2f%%, p90 %.2f%%; band %.2f%%\n",
      spread.size(), 100 * Quantile(spread, 0.5), 100 * Quantile(spread, 0.9), 100 * band);
  PrintKindSummary(results);
  std::vector<double> over_copy, over_default;
  for (const PointResult& res : results) {
    if (res.timed.empty()) continue;
    const Timed* chosen = Chosen(res, band);
    if (res.copy_us >= 20) over_copy.push_back(chosen->us / res.copy_us);
    if (const Timed* d = Find(res, res.default_config)) over_default.push_back(chosen->us / d->us);
  }
  std::printf(
      "# the choice over the copy of the same bytes (copy >= 20 us, %zu points): median "
      "%.3f, p95 %.3f, max %.3f\n",
      over_copy.size(), Quantile(over_copy, 0.5), Quantile(over_copy, 0.95),
      Quantile(over_copy, 1.0));
  std::printf("# the choice over the default configuration (%zu points): median %.3f, min %.3f\n",
              over_default.size(), Quantile(over_default, 0.5), Quantile(over_default, 0.0));
  cudaStreamDestroy(stream);
  return mismatches == 0 ? 0 : 1;
}

int BuildTable(const TableOptions& options) {
  std::map<std::tuple<int, bool, bool, int64_t, int64_t>, PointResult> points;
  DeviceNote device;
  double band = options.band;
  const cuda::internal::DeviceFeatures features{0, 0, true};
  int64_t read = 0, dropped = 0;
  for (const std::string& path : options.measurements_csv) {
    FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) {
      std::perror(path.c_str());
      return 1;
    }
    char line[512];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      std::string text(line);
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
      char name[256];
      double value = 0;
      if (std::sscanf(text.c_str(), "# device %255[^\n]", name) == 1) device.name = name;
      if (std::sscanf(text.c_str(), "# sm %lf", &value) == 1) device.sm = static_cast<int>(value);
      if (std::sscanf(text.c_str(), "# multiprocessors %lf", &value) == 1) {
        device.multiprocessors = static_cast<int>(value);
      }
      if (options.band == 0 && std::sscanf(text.c_str(), "# band %lf", &value) == 1) band = value;
      if (text.empty() || text[0] == '#' || text.rfind("tier,", 0) == 0) continue;
      std::vector<std::string> field;
      size_t at = 0;
      while (true) {
        const size_t comma = text.find(',', at);
        field.push_back(
            text.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
        if (comma == std::string::npos) break;
        at = comma + 1;
      }
      if (field.size() < 10) continue;
      Point p;
      p.tier = std::stoi(field[0]);
      p.dtype = field[1] == "fp32"   ? DType::kFloat32
                : field[1] == "fp16" ? DType::kFloat16
                                     : DType::kBFloat16;
      p.residual = field[2] == "1";
      p.fp32_weights = field[3] == "fp32";
      p.hidden = std::stoll(field[5]);
      p.rows = std::stoll(field[6]);
      // Measurements of configurations the library no longer has are dropped (an earlier
      // notation's weight placement: the weight after the sum is today's only one).
      std::string config_text = field[7];
      const size_t w = config_text.find(" w=");
      if (w != std::string::npos) {
        if (config_text.substr(w) != " w=after") {
          ++dropped;
          continue;
        }
        config_text.erase(w);
      }
      KernelConfig config;
      if (!cuda::internal::ParseConfig(config_text, &config)) {
        ++dropped;
        continue;
      }
      const cuda::internal::LaunchTraits traits = TraitsFor(p);
      if (!cuda::internal::ResolveShape(config, traits, features).valid()) {
        ++dropped;
        continue;
      }
      const auto key =
          std::make_tuple(static_cast<int>(p.dtype), p.residual, p.fp32_weights, p.hidden, p.rows);
      PointResult& r = points[key];
      r.point = p;
      r.vector = field[4] == "vector";
      r.copy_us = std::stod(field[9]);
      r.default_config = cuda::internal::ResolveShape(
                             cuda::internal::DefaultConfig(traits, features), traits, features)
                             .config;
      const double us = std::stod(field[8]);
      bool replaced = false;
      for (Timed& t : r.timed) {
        if (t.config == config) {
          t.us = us;
          replaced = true;
        }
      }
      if (!replaced) r.timed.push_back({config, us});
      ++read;
    }
    std::fclose(f);
  }
  std::vector<PointResult> results;
  for (auto& [key, r] : points) results.push_back(std::move(r));
  std::string note;
  if (options.measurements_csv.size() > 1) {
    note = "\n# Written by `normd_kernel_bench table` from the measurements of " +
           std::to_string(options.measurements_csv.size()) +
           " sweep runs (a later run's time of a configuration replaces an earlier one's).";
  }
  WriteTable(options.table_csv, results, band, options.command, device, note);
  std::printf(
      "# table: %zu points from %lld measurements (%lld of configurations no longer built "
      "dropped), band %.2f%%\n",
      results.size(), static_cast<long long>(read), static_cast<long long>(dropped), 100 * band);
  return 0;
}

}  // namespace normd::bench
