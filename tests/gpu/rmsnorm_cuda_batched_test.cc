// The batched entry point (device segment table), 64-bit indexing (rows x H > 2^31) and
// programmatic dependent launch inside a CUDA graph. The host-side argument checks and shape
// choices: rmsnorm_cuda_arguments_test.cc.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/kernel_config.h"
#include "kernels/cuda/rmsnorm_cuda.h"
#include "kernels/dtype.h"
#include "kernels/rmsnorm.h"
#include "tests/gpu/gpu_test_util.h"

namespace normd::gputest {
namespace {

constexpr DType kDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

// The traits of a table of `rows` rows, every segment of a 16-bit launch possibly with fp32
// weights: what the candidate configurations of the forced-configuration tests are drawn from.
cuda::internal::LaunchTraits TableTraits(DType dtype, int64_t hidden, int64_t rows, bool residual,
                                         cuda::internal::Alignment alignment) {
  cuda::internal::LaunchTraits traits;
  traits.dtype = dtype;
  traits.hidden = hidden;
  traits.rows = rows;
  traits.residual = residual;
  traits.fp32_weights = dtype != DType::kFloat32;
  traits.alignment = alignment;
  traits.table = true;
  return traits;
}

// Uploads `table` (host_copy: also passes it as the host copy), runs one batched launch over it
// with `overrides` and waits for it.
cudaError_t RunTable(DType dtype, int64_t hidden, int64_t total_rows,
                     const std::vector<RmsNormSegment>& table, bool host_copy,
                     const cuda::internal::LaunchOverrides& overrides) {
  DeviceBuffer dtable(table.size() * sizeof(RmsNormSegment));
  dtable.Upload(table.data(), table.size() * sizeof(RmsNormSegment));
  RmsNormLaunch launch;
  launch.dtype = dtype;
  launch.hidden = hidden;
  launch.total_rows = total_rows;
  launch.segments = static_cast<const RmsNormSegment*>(dtable.get());
  launch.num_segments = static_cast<int32_t>(table.size());
  const cudaError_t e = cuda::internal::RmsNormBatchedWith(
      launch, host_copy ? table.data() : nullptr, nullptr, {}, overrides);
  return e != cudaSuccess ? e : cudaDeviceSynchronize();
}

// One request of a batch: its own buffers and parameters.
struct Request {
  int64_t rows = 0;
  bool residual = false;
  bool in_place_residual = false;
  bool misaligned = false;
  DType weight_dtype = DType::kFloat32;
  float eps = 1e-6f;
  float offset = 0.0f;
  HostBytes x, r, w;
  DeviceBuffer dx, dy, dr, dro, dw;
};

// One launch over segments of `row_counts` rows (one table) differing in eps, weight dtype,
// weight_offset, residual (segment 4 in place), alignment (segment 2 on the element path while the
// others use vectors), each checked against the reference.
void CheckMixedSegments(DType dtype, int64_t hidden, const std::vector<int64_t>& row_counts,
                        const cuda::internal::LaunchOverrides& overrides, bool host_copy,
                        const std::string& label, Random& rng) {
  const size_t item = ItemSize(dtype);
  std::vector<Request> requests(row_counts.size());
  std::vector<RmsNormSegment> table;
  int64_t first_row = 0;
  for (size_t k = 0; k < requests.size(); ++k) {
    Request& q = requests[k];
    q.rows = row_counts[k];
    q.residual = k % 2 == 0;
    q.in_place_residual = k == 4;
    if (q.in_place_residual) q.residual = true;
    q.misaligned = k == 2;
    q.weight_dtype = (k % 3 == 1) ? DType::kFloat32 : dtype;
    q.eps = k % 3 == 0 ? 1e-6f : (k % 3 == 1 ? 1e-5f : 1e-2f);
    q.offset = k % 2 == 1 ? 1.0f : 0.0f;
    const size_t count = static_cast<size_t>(q.rows * hidden);
    const size_t bytes = count * item;
    const size_t shift = q.misaligned ? item : 0;
    q.x = RandomTensor(dtype, count, -2.0f, 2.0f, rng);
    q.r = RandomTensor(dtype, count, -2.0f, 2.0f, rng);
    q.w = RandomTensor(q.weight_dtype, static_cast<size_t>(hidden), -1.5f, 1.5f, rng);
    q.dx = DeviceBuffer(bytes, shift);
    q.dy = DeviceBuffer(bytes, shift);
    q.dr = DeviceBuffer(bytes, shift);
    q.dro = DeviceBuffer(bytes, shift);
    q.dw = DeviceBuffer(q.w.size());
    if (bytes > 0) {
      q.dx.Upload(q.x.data(), bytes);
      q.dr.Upload(q.r.data(), bytes);
      q.dy.Fill(kPoisonByte);
      q.dro.Fill(kPoisonByte);
    }
    q.dy.ArmGuards();
    q.dro.ArmGuards();
    q.dw.Upload(q.w.data(), q.w.size());
    RmsNormSegment seg;
    seg.input = q.dx.get();
    seg.output = q.dy.get();
    seg.residual = q.residual ? q.dr.get() : nullptr;
    seg.residual_out = q.residual ? (q.in_place_residual ? q.dr.get() : q.dro.get()) : nullptr;
    seg.weight = q.dw.get();
    seg.weight_dtype = q.weight_dtype;
    seg.first_row = first_row;
    seg.rows = q.rows;
    seg.eps = q.eps;
    seg.weight_offset = q.offset;
    table.push_back(seg);
    first_row += q.rows;
  }
  NORMD_CUDA_OK(RunTable(dtype, hidden, first_row, table, host_copy, overrides));
  for (size_t k = 0; k < requests.size(); ++k) {
    const Request& q = requests[k];
    const std::string what = std::string(DTypeName(dtype)) + " H=" + std::to_string(hidden) +
                             label + " segment " + std::to_string(k);
    SCOPED_TRACE(what);
    EXPECT_TRUE(q.dy.GuardsIntact());
    EXPECT_TRUE(q.dro.GuardsIntact());
    const size_t count = static_cast<size_t>(q.rows * hidden);
    if (count == 0) continue;
    HostBytes y(count * item), ro(count * item);
    q.dy.Download(y.data(), y.size());
    if (q.residual) (q.in_place_residual ? q.dr : q.dro).Download(ro.data(), ro.size());
    EXPECT_EQ(CountPoisoned(dtype, y.data(), count), 0);
    RmsNormSegment host = table[k];
    host.input = q.x.data();
    host.residual = q.residual ? q.r.data() : nullptr;
    host.weight = q.w.data();
    ASSERT_EQ(CheckRows(dtype, hidden, host, y.data(), q.residual ? ro.data() : nullptr,
                        RowsToCheck(q.rows, hidden, rng), what),
              0);
  }
}

// Mixed segments (CheckMixedSegments) in one launch, every dtype and H: 1373 rows (one segment
// empty) and 14 rows (where a single segment could take the cluster kernel), with and without the
// table's host copy; then, at 14 rows, every configuration the launcher can run for such a table
// (forced), so that every kernel meets the table's mix.
TEST(RmsNormCudaBatched, MixedSegmentsInOneLaunch) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x6666);
  const std::vector<int64_t> many_rows = {5, 0, 300, 1, 64, 1000, 3};
  const std::vector<int64_t> few_rows = {5, 0, 3, 1, 2, 0, 3};
  const cuda::internal::DeviceFeatures device = cuda::internal::CurrentDeviceFeatures();
  for (const DType dtype : kDTypes) {
    for (const int64_t hidden : {111, 4096, 7168, 20000}) {
      for (const bool host_copy : {false, true}) {
        for (const bool few : {false, true}) {
          CheckMixedSegments(dtype, hidden, few ? few_rows : many_rows, {}, host_copy,
                             std::string(few ? " few rows" : "") + (host_copy ? " host copy" : ""),
                             rng);
          if (HasFatalFailure()) return;
        }
      }
      // The traits of the mixed table (residuals, fp32 weights, and segment 2 unaligned).
      const cuda::internal::LaunchTraits traits =
          TableTraits(dtype, hidden, 14, true, cuda::internal::Alignment::kElement);
      for (const auto& config : cuda::internal::CandidateConfigs(traits, device)) {
        cuda::internal::LaunchOverrides overrides;
        overrides.config = &config;
        CheckMixedSegments(dtype, hidden, few_rows, overrides, true,
                           " forced " + cuda::internal::Describe(config), rng);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Segments all on the vector path, with and without residuals, in one launch with the host copy:
// every configuration such a table can run (the reload and cluster kernels among them), forced.
TEST(RmsNormCudaBatched, AlignedSegmentsEveryConfiguration) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x6767);
  const cuda::internal::DeviceFeatures device = cuda::internal::CurrentDeviceFeatures();
  for (const DType dtype : kDTypes) {
    for (const int64_t hidden : {1024, 4096, 20480}) {
      const cuda::internal::LaunchTraits traits =
          TableTraits(dtype, hidden, 140, true, cuda::internal::Alignment::kVector);
      for (const auto& config : cuda::internal::CandidateConfigs(traits, device)) {
        cuda::internal::LaunchOverrides overrides;
        overrides.config = &config;
        CheckMixedSegments(dtype, hidden, {50, 1, 0, 64, 25}, overrides, true,
                           " aligned, forced " + cuda::internal::Describe(config), rng);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// One tensor cut into segments of `counts` rows (a contiguous table, as normd packs a batch):
// each segment its own weight (fp32 for every third, the input's dtype otherwise), eps and
// weight_offset; residual in all or none; in place when `in_place`. Run with the table's host copy
// and `overrides`, each segment checked against the reference.
void CheckContiguousSegments(DType dtype, int64_t hidden, const std::vector<int64_t>& counts,
                             bool residual, bool in_place,
                             const cuda::internal::LaunchOverrides& overrides,
                             const std::string& label, Random& rng) {
  int64_t total = 0;
  for (const int64_t c : counts) total += c;
  const size_t item = ItemSize(dtype);
  const size_t count = static_cast<size_t>(total * hidden);
  const size_t bytes = count * item;
  const HostBytes x = RandomTensor(dtype, count, -2.0f, 2.0f, rng);
  const HostBytes r = RandomTensor(dtype, count, -2.0f, 2.0f, rng);
  DeviceBuffer dx(bytes), dr(bytes), dy(bytes), dro(bytes);
  dx.Upload(x.data(), bytes);
  dr.Upload(r.data(), bytes);
  if (in_place) {
    dy.Upload(x.data(), bytes);
    dro.Upload(r.data(), bytes);
  } else {
    dy.Fill(kPoisonByte);
    dro.Fill(kPoisonByte);
  }
  dy.ArmGuards();
  dro.ArmGuards();
  std::vector<HostBytes> weights;
  std::vector<DeviceBuffer> device_weights;
  std::vector<RmsNormSegment> table;
  int64_t first = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    const DType weight_dtype = k % 3 == 2 ? DType::kFloat32 : dtype;
    weights.push_back(RandomTensor(weight_dtype, static_cast<size_t>(hidden), -1.5f, 1.5f, rng));
    device_weights.emplace_back(weights.back().size());
    device_weights.back().Upload(weights.back().data(), weights.back().size());
    const size_t at = static_cast<size_t>(first * hidden) * item;
    RmsNormSegment s;
    s.input = static_cast<const unsigned char*>(in_place ? dy.get() : dx.get()) + at;
    s.output = static_cast<unsigned char*>(dy.get()) + at;
    if (residual) {
      s.residual = static_cast<const unsigned char*>(in_place ? dro.get() : dr.get()) + at;
      s.residual_out = static_cast<unsigned char*>(dro.get()) + at;
    }
    s.weight = device_weights.back().get();
    s.weight_dtype = weight_dtype;
    s.first_row = first;
    s.rows = counts[k];
    s.eps = k % 2 == 0 ? 1e-6f : 1e-2f;
    s.weight_offset = k % 4 == 1 ? 1.0f : 0.0f;
    table.push_back(s);
    first += counts[k];
  }
  NORMD_CUDA_OK(RunTable(dtype, hidden, total, table, /*host_copy=*/true, overrides));
  EXPECT_TRUE(dy.GuardsIntact()) << label;
  EXPECT_TRUE(dro.GuardsIntact()) << label;
  HostBytes y(bytes), ro(bytes);
  dy.Download(y.data(), bytes);
  if (residual) dro.Download(ro.data(), bytes);
  EXPECT_EQ(CountPoisoned(dtype, y.data(), count), 0) << label;
  for (size_t k = 0; k < table.size(); ++k) {
    if (counts[k] == 0) continue;
    const size_t at = static_cast<size_t>(table[k].first_row * hidden) * item;
    RmsNormSegment host = table[k];
    host.input = x.data() + at;
    host.residual = residual ? r.data() + at : nullptr;
    host.weight = weights[k].data();
    const std::string what = std::string(DTypeName(dtype)) + " H=" + std::to_string(hidden) +
                             label + " segment " + std::to_string(k);
    ASSERT_EQ(CheckRows(dtype, hidden, host, y.data() + at, residual ? ro.data() + at : nullptr,
                        RowsToCheck(counts[k], hidden, rng), what),
              0);
  }
}

// Contiguous tables (a row's data found without the table: KernelParams::contiguous) with every
// configuration such a table can run, forced, and the automatic choice; one empty segment; and a
// table of 64 segments of 1-64 rows.
TEST(RmsNormCudaBatched, ContiguousSegmentsEveryConfiguration) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x6868);
  const cuda::internal::DeviceFeatures device = cuda::internal::CurrentDeviceFeatures();
  std::vector<int64_t> many(64);
  for (int64_t& c : many) c = 1 + static_cast<int64_t>(rng.Next() % 64);
  for (const DType dtype : kDTypes) {
    for (const int64_t hidden : {1024, 4096, 7168}) {
      for (const bool residual : {false, true}) {
        const cuda::internal::LaunchTraits traits =
            TableTraits(dtype, hidden, 140, residual, cuda::internal::Alignment::kVector);
        for (const auto& config : cuda::internal::CandidateConfigs(traits, device)) {
          cuda::internal::LaunchOverrides overrides;
          overrides.config = &config;
          CheckContiguousSegments(dtype, hidden, {50, 1, 0, 64, 25}, residual, residual, overrides,
                                  " contiguous, forced " + cuda::internal::Describe(config), rng);
          if (HasFatalFailure()) return;
        }
        CheckContiguousSegments(dtype, hidden, many, residual, false, {},
                                " contiguous, 64 segments", rng);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Fills rows x hidden elements on the device with `pattern` (pattern_rows rows) repeated: row i
// holds pattern row i % pattern_rows. Doubling copies keep that invariant (each copied span is a
// multiple of pattern_rows rows long).
void FillRepeated(void* device, const HostBytes& pattern, int64_t pattern_rows, int64_t rows,
                  size_t row_bytes) {
  auto* d = static_cast<unsigned char*>(device);
  ASSERT_EQ(cudaMemcpy(d, pattern.data(), pattern.size(), cudaMemcpyHostToDevice), cudaSuccess);
  int64_t filled = pattern_rows;
  while (filled < rows) {
    const int64_t n = std::min(filled, rows - filled);
    ASSERT_EQ(cudaMemcpy(d + filled * row_bytes, d, n * row_bytes, cudaMemcpyDeviceToDevice),
              cudaSuccess);
    filled += n;
  }
}

// rows x H > 2^31 elements (and > 2^32 bytes): the register kernel (H 16384) and the two-pass
// kernel (H 65536, in-place residual), through both entry points. Rows around the 2^31-byte and
// 2^31-element marks and the last rows are checked.
TEST(RmsNormCudaBatched, SixtyFourBitIndexing) {
  NORMD_REQUIRE_DEVICE();
  size_t free_bytes = 0, total_bytes = 0;
  NORMD_CUDA_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (free_bytes < (size_t{14} << 30)) GTEST_SKIP() << "needs 14 GiB of device memory";
  Random rng(ProcessSeed() ^ 0x7777);
  const DType dtype = DType::kBFloat16;
  const int64_t pattern_rows = 5;
  struct Case {
    int64_t hidden;
    int64_t rows;
    bool residual;
    bool batched;
  };
  const Case cases[] = {
      {16384, 131073, false, false}, {16384, 131073, false, true}, {65536, 32769, true, false}};
  for (const Case& c : cases) {
    const std::string what = "H=" + std::to_string(c.hidden) + " rows=" + std::to_string(c.rows) +
                             (c.batched ? " batched" : " single");
    SCOPED_TRACE(what);
    ASSERT_GT(c.rows * c.hidden, int64_t{1} << 31);
    const size_t row_bytes = static_cast<size_t>(c.hidden) * ItemSize(dtype);
    const size_t bytes = row_bytes * static_cast<size_t>(c.rows);
    const size_t pattern_count = static_cast<size_t>(pattern_rows * c.hidden);
    const HostBytes px = RandomTensor(dtype, pattern_count, -2.0f, 2.0f, rng);
    const HostBytes pr = RandomTensor(dtype, pattern_count, -2.0f, 2.0f, rng);
    const HostBytes w =
        RandomTensor(DType::kFloat32, static_cast<size_t>(c.hidden), -1.5f, 1.5f, rng);
    DeviceBuffer dx(bytes), dy(bytes), dw(w.size());
    DeviceBuffer dr(c.residual ? bytes : 0);
    ASSERT_TRUE(dx.ok() && dy.ok() && dw.ok() && dr.ok());
    FillRepeated(dx.get(), px, pattern_rows, c.rows, row_bytes);
    if (c.residual) FillRepeated(dr.get(), pr, pattern_rows, c.rows, row_bytes);
    dw.Upload(w.data(), w.size());
    dy.Fill(kPoisonByte);
    RmsNormSegment seg;
    seg.input = dx.get();
    seg.output = dy.get();
    seg.residual = c.residual ? dr.get() : nullptr;
    seg.residual_out = c.residual ? dr.get() : nullptr;
    seg.weight = dw.get();
    seg.weight_dtype = DType::kFloat32;
    seg.rows = c.rows;
    if (c.batched) {
      DeviceBuffer dtable(sizeof seg);
      dtable.Upload(&seg, sizeof seg);
      RmsNormLaunch launch;
      launch.dtype = dtype;
      launch.hidden = c.hidden;
      launch.total_rows = c.rows;
      launch.segments = static_cast<const RmsNormSegment*>(dtable.get());
      launch.num_segments = 1;
      NORMD_CUDA_OK(cuda::RmsNormBatched(launch, nullptr));
      NORMD_CUDA_OK(cudaDeviceSynchronize());
    } else {
      NORMD_CUDA_OK(cuda::RmsNorm(dtype, c.hidden, seg, nullptr));
      NORMD_CUDA_OK(cudaDeviceSynchronize());
    }
    const int64_t mark_bytes = (int64_t{1} << 31) / static_cast<int64_t>(row_bytes);
    const int64_t mark_elems = (int64_t{1} << 31) / c.hidden;
    std::vector<int64_t> rows = {
        0,          1,          mark_bytes - 1, mark_bytes, mark_bytes + 1, mark_elems - 1,
        mark_elems, c.rows - 2, c.rows - 1};
    for (int i = 0; i < 8; ++i) rows.push_back(static_cast<int64_t>(rng.Next() % c.rows));
    for (const int64_t row : rows) {
      if (row < 0 || row >= c.rows) continue;
      HostBytes y(row_bytes), ro(row_bytes);
      ASSERT_EQ(cudaMemcpy(y.data(), static_cast<unsigned char*>(dy.get()) + row * row_bytes,
                           row_bytes, cudaMemcpyDeviceToHost),
                cudaSuccess);
      if (c.residual) {
        ASSERT_EQ(cudaMemcpy(ro.data(), static_cast<unsigned char*>(dr.get()) + row * row_bytes,
                             row_bytes, cudaMemcpyDeviceToHost),
                  cudaSuccess);
      }
      const int64_t p = row % pattern_rows;
      RmsNormSegment host = seg;
      host.input = px.data() + p * row_bytes;
      host.residual = c.residual ? pr.data() + p * row_bytes : nullptr;
      host.weight = w.data();
      host.rows = 1;
      ASSERT_EQ(CheckRows(dtype, c.hidden, host, y.data(), c.residual ? ro.data() : nullptr, {0},
                          what + " row " + std::to_string(row)),
                0);
    }
  }
}

// 20 launches chained in place (each reads what the previous wrote), with programmatic dependent
// launch and the weight read before the dependency wait, captured in a CUDA graph and replayed.
TEST(RmsNormCudaBatched, PdlChainInGraph) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x8888);
  const DType dtype = DType::kFloat32;
  for (const int64_t hidden : {4096, 7168, 111, 20000}) {
    for (const int64_t rows : {1, 8, 300}) {
      const size_t count = static_cast<size_t>(rows * hidden);
      const size_t bytes = count * 4;
      const HostBytes x = RandomTensor(dtype, count, -2.0f, 2.0f, rng);
      const HostBytes r = RandomTensor(dtype, count, -2.0f, 2.0f, rng);
      const HostBytes w = RandomTensor(dtype, static_cast<size_t>(hidden), 0.9f, 1.1f, rng);
      DeviceBuffer dx(bytes), dr(bytes), dw(w.size());
      dx.Upload(x.data(), bytes);
      dr.Upload(r.data(), bytes);
      dw.Upload(w.data(), w.size());
      cudaStream_t stream = nullptr;
      NORMD_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      RmsNormSegment seg;
      seg.input = dx.get();
      seg.output = dx.get();
      seg.residual = dr.get();
      seg.residual_out = dr.get();
      seg.weight = dw.get();
      seg.weight_dtype = dtype;
      seg.rows = rows;
      cuda::RmsNormOptions options;
      options.programmatic_dependent_launch = true;
      options.weight_before_dependency_wait = true;
      constexpr int kLaunches = 20;
      cudaGraph_t graph = nullptr;
      NORMD_CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      for (int i = 0; i < kLaunches; ++i) {
        ASSERT_EQ(cuda::RmsNorm(dtype, hidden, seg, stream, options), cudaSuccess);
      }
      NORMD_CUDA_OK(cudaStreamEndCapture(stream, &graph));
      cudaGraphExec_t exec = nullptr;
      NORMD_CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
      NORMD_CUDA_OK(cudaGraphLaunch(exec, stream));
      NORMD_CUDA_OK(cudaStreamSynchronize(stream));
      HostBytes y(bytes), ro(bytes);
      dx.Download(y.data(), bytes);
      dr.Download(ro.data(), bytes);
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
      cudaStreamDestroy(stream);
      // The same chain in double: x <- norm(x + r) * w, r <- x + r.
      std::vector<double> hx(count), hr(count);
      for (size_t i = 0; i < count; ++i) {
        hx[i] = LoadAsFloat(x.data(), dtype, i);
        hr[i] = LoadAsFloat(r.data(), dtype, i);
      }
      for (int it = 0; it < kLaunches; ++it) {
        for (int64_t row = 0; row < rows; ++row) {
          double ss = 0.0;
          for (int64_t i = 0; i < hidden; ++i) {
            const size_t at = static_cast<size_t>(row * hidden + i);
            hr[at] += hx[at];
            ss += hr[at] * hr[at];
          }
          const double inv = 1.0 / std::sqrt(ss / static_cast<double>(hidden) + 1e-6);
          for (int64_t i = 0; i < hidden; ++i) {
            const size_t at = static_cast<size_t>(row * hidden + i);
            hx[at] = hr[at] * inv * LoadAsFloat(w.data(), dtype, static_cast<size_t>(i));
          }
        }
      }
      int64_t bad = 0;
      for (size_t i = 0; i < count; ++i) {
        const double gy = LoadAsFloat(y.data(), dtype, i);
        const double gr = LoadAsFloat(ro.data(), dtype, i);
        if (!(std::fabs(gy - hx[i]) <= 1e-4 * std::fabs(hx[i]) + 1e-5) ||
            !(std::fabs(gr - hr[i]) <= 1e-4 * std::fabs(hr[i]) + 1e-4)) {
          if (bad++ < 5) {
            ADD_FAILURE() << "H=" << hidden << " rows=" << rows << " element " << i << ": y " << gy
                          << " vs " << hx[i] << ", residual " << gr << " vs " << hr[i];
          }
        }
      }
      ASSERT_EQ(bad, 0);
    }
  }
}

}  // namespace
}  // namespace normd::gputest
