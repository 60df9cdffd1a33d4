// The batched entry point (device segment table), 64-bit indexing (rows x H > 2^31), programmatic
// dependent launch inside a CUDA graph, and the host-side argument checks.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/rmsnorm_cuda.h"
#include "kernels/dtype.h"
#include "kernels/rmsnorm.h"
#include "tests/gpu/gpu_test_util.h"

namespace normd::gputest {
namespace {

constexpr DType kDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

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

// Segments differing in rows (one empty), eps, weight dtype, weight_offset, residual (one in
// place), alignment (one segment on the element path while the others use vectors), all in one
// launch.
TEST(RmsNormCudaBatched, MixedSegmentsInOneLaunch) {
  NORMD_REQUIRE_DEVICE();
  Random rng(ProcessSeed() ^ 0x6666);
  for (const DType dtype : kDTypes) {
    for (const int64_t hidden : {111, 4096, 7168, 20000}) {
      const size_t item = ItemSize(dtype);
      const int64_t row_counts[] = {5, 0, 300, 1, 64, 1000, 3};
      std::vector<Request> requests(std::size(row_counts));
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
      DeviceBuffer dtable(table.size() * sizeof(RmsNormSegment));
      dtable.Upload(table.data(), table.size() * sizeof(RmsNormSegment));
      RmsNormLaunch launch;
      launch.dtype = dtype;
      launch.hidden = hidden;
      launch.total_rows = first_row;
      launch.segments = static_cast<const RmsNormSegment*>(dtable.get());
      launch.num_segments = static_cast<int32_t>(table.size());
      // The cluster kernel (rows split over 4 CTAs) forced at two H, so that it meets the table's
      // mix too: the register and two-pass kernels at the others.
      cuda::RmsNormOptions options;
      if (hidden == 111 || hidden == 7168) options.cluster_ctas = 4;
      NORMD_CUDA_OK(cuda::RmsNormBatched(launch, nullptr, options));
      NORMD_CUDA_OK(cudaDeviceSynchronize());
      for (size_t k = 0; k < requests.size(); ++k) {
        const Request& q = requests[k];
        const std::string what = std::string(DTypeName(dtype)) + " H=" + std::to_string(hidden) +
                                 " segment " + std::to_string(k);
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

// Host-side checks: refused arguments never reach the device, and an empty launch is a no-op. These
// run without a device too.
TEST(RmsNormCudaArguments, RefusedOnTheHost) {
  RmsNormSegment seg;
  int dummy = 0;
  seg.input = &dummy;
  seg.output = &dummy;
  seg.weight = &dummy;
  seg.rows = 4;
  seg.weight_dtype = DType::kFloat32;
  EXPECT_EQ(cuda::RmsNorm(DType::kFloat16, 0, seg, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cuda::RmsNorm(DType::kFloat16, cuda::kMaxHidden + 1, seg, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cuda::RmsNorm(static_cast<DType>(7), 64, seg, nullptr), cudaErrorInvalidValue);
  RmsNormSegment bad_weight = seg;
  bad_weight.weight_dtype = DType::kBFloat16;
  EXPECT_EQ(cuda::RmsNorm(DType::kFloat16, 64, bad_weight, nullptr), cudaErrorInvalidValue);
  RmsNormSegment no_out = seg;
  no_out.residual = &dummy;
  EXPECT_EQ(cuda::RmsNorm(DType::kFloat32, 64, no_out, nullptr), cudaErrorInvalidValue);
  RmsNormSegment empty = seg;
  empty.rows = 0;
  EXPECT_EQ(cuda::RmsNorm(DType::kFloat32, 64, empty, nullptr), cudaSuccess);
  RmsNormLaunch launch;
  launch.dtype = DType::kBFloat16;
  launch.hidden = 64;
  launch.total_rows = 0;
  EXPECT_EQ(cuda::RmsNormBatched(launch, nullptr), cudaSuccess);
  launch.total_rows = 3;
  EXPECT_EQ(cuda::RmsNormBatched(launch, nullptr), cudaErrorInvalidValue);  // no table
  cuda::RmsNormOptions too_small;
  too_small.threads_per_row = 32;
  too_small.vectors_per_thread = 1;
  EXPECT_EQ(cuda::RmsNorm(DType::kFloat32, 4096, seg, nullptr, too_small), cudaErrorInvalidValue);
}

// The automatic choice takes the lean two-pass kernel only where it was measured faster (see
// LeanTwoPassWins), and the options can force it either way.
TEST(RmsNormCudaArguments, LeanTwoPassChoice) {
  using Lean = cuda::RmsNormOptions::LeanTwoPass;
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kFloat32, 3000, 65536, true).lean);
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kFloat32, 7168, 16384, false).lean);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 8192, 16384, false).lean);   // reload (v10)
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 4096, 65536, true).lean);   // reload (v9)
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 4096, 65536, false).lean);  // 16-bit plain
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 5120, 65536, true).lean);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 3000, 4096, true).lean);  // too few rows
  cuda::RmsNormOptions off;
  off.lean_two_pass = Lean::kOff;
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 3000, 65536, true, off).lean);
  cuda::RmsNormOptions on;
  on.lean_two_pass = Lean::kOn;
  const cuda::KernelShape forced = cuda::ChooseKernelShape(DType::kBFloat16, 3000, 7, false, on);
  EXPECT_TRUE(forced.two_pass && forced.lean);
  EXPECT_EQ(forced.threads_per_block, 384);  // 375 vectors in whole warps
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 65536, 7, false, on).threads_per_block, 512);
}

// The automatic choice takes the reload kernel only where it was measured faster (see ReloadWins):
// plain 16-bit rows of H 1024 to 16384 from 1024 rows (two or four vectors per thread), plain fp32
// rows at the H and row counts where they won, rows with a residual at the H and row counts where
// they won (one, two or four vectors per thread, see ReloadVectorsFor); the options force it (where
// the row fits 1024 threads of four vectors) or forbid it.
TEST(RmsNormCudaArguments, ReloadChoice) {
  using Reload = cuda::RmsNormOptions::Reload;
  const cuda::KernelShape bf16 = cuda::ChooseKernelShape(DType::kBFloat16, 5120, 65536, false);
  EXPECT_TRUE(bf16.reload);
  EXPECT_EQ(bf16.vectors_per_thread, 2);
  EXPECT_EQ(bf16.threads_per_row, 320);  // 640 vectors
  // Four vectors per thread for 16-bit H 16384 and 7168, H 5120 and 8192 at 1024 rows.
  const cuda::KernelShape wide = cuda::ChooseKernelShape(DType::kFloat16, 16384, 1024, false);
  EXPECT_TRUE(wide.reload);
  EXPECT_EQ(wide.vectors_per_thread, 4);
  EXPECT_EQ(wide.threads_per_block, 512);
  EXPECT_FALSE(wide.reload_wide);  // the 32-register build
  const cuda::KernelShape h7168 = cuda::ChooseKernelShape(DType::kBFloat16, 7168, 4096, false);
  EXPECT_EQ(h7168.threads_per_row, 224);
  EXPECT_TRUE(h7168.reload_wide);  // the 64-register build measured faster there
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 7168, 1024, false).reload_wide);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 8192, 1024, false).vectors_per_thread, 4);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 8192, 4096, false).vectors_per_thread, 2);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 1024, 4096, false).threads_per_row, 64);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 1024, 16384, false).threads_per_row, 32);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 1024, 16384, false).vectors_per_thread, 2);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 5120, 4096, false).vectors_per_thread, 4);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 5120, 16384, false).vectors_per_thread, 2);
  const cuda::KernelShape narrow = cuda::ChooseKernelShape(DType::kBFloat16, 1024, 4096, false);
  EXPECT_TRUE(narrow.reload);
  EXPECT_EQ(narrow.threads_per_row, 64);
  EXPECT_EQ(narrow.rows_per_block, 4);
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kFloat32, 3000, 4096, false).reload);
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kFloat32, 5120, 65536, false).reload);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 5120, 65536, false).threads_per_row, 640);
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kFloat32, 7168, 1024, false).reload);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 7168, 4096, false).vectors_per_thread, 4);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 7168, 16384, false).reload);  // lean
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 1024, 1024, false).reload);
  // fp32 H 8192 and, from 4096 rows, 16384: four vectors per thread (1024 threads for 16384).
  const cuda::KernelShape fp32_16k = cuda::ChooseKernelShape(DType::kFloat32, 16384, 65536, false);
  EXPECT_TRUE(fp32_16k.reload);
  EXPECT_EQ(fp32_16k.threads_per_block, 1024);
  EXPECT_FALSE(fp32_16k.reload_wide);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 16384, 1024, false).reload);  // staged
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 8192, 65536, false).threads_per_row, 512);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 4096, 1024, false).vectors_per_thread, 4);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 1024, 4096, false).vectors_per_thread, 4);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 5120, 1024, false).reload);
  // With a residual: one vector per thread at H 1024, 3000 (from 4096 rows) and 4096; two at 3000
  // below 4096 rows, 5120, 7168, 8192; only from 4096 rows but at H 3000 and 16384.
  const cuda::KernelShape fused_one = cuda::ChooseKernelShape(DType::kBFloat16, 4096, 65536, true);
  EXPECT_TRUE(fused_one.reload);
  EXPECT_EQ(fused_one.vectors_per_thread, 1);
  EXPECT_EQ(fused_one.threads_per_row, 512);
  const cuda::KernelShape fused_two = cuda::ChooseKernelShape(DType::kFloat16, 7168, 4096, true);
  EXPECT_TRUE(fused_two.reload);
  EXPECT_EQ(fused_two.vectors_per_thread, 2);
  EXPECT_EQ(fused_two.threads_per_block, 448);  // the variant given 40 registers (<= 512 threads)
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 3000, 1024, true).vectors_per_thread, 2);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 3000, 4096, true).vectors_per_thread, 1);
  const cuda::KernelShape fused_four = cuda::ChooseKernelShape(DType::kBFloat16, 4096, 1024, true);
  EXPECT_EQ(fused_four.vectors_per_thread, 4);
  EXPECT_TRUE(fused_four.reload_wide);  // four with a residual: always the 64-register build
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat16, 1024, 4096, true).vectors_per_thread, 4);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat16, 1024, 16384, true).vectors_per_thread, 1);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 1024, 2048, true).reload);
  EXPECT_TRUE(cuda::ChooseKernelShape(DType::kFloat32, 1024, 1024, true).reload);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 4096, 4096, true).vectors_per_thread, 2);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 4096, 1024, true).reload);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 5120, 65536, true).reload);
  // Rows of 16384 with a residual: 512 threads of four vectors instead of the staged kernel (16-bit)
  // or the register kernel (fp32, up to 4096 rows: 1024 threads of four).
  const cuda::KernelShape fused_wide = cuda::ChooseKernelShape(DType::kBFloat16, 16384, 4096, true);
  EXPECT_TRUE(fused_wide.reload);
  EXPECT_EQ(fused_wide.threads_per_row, 512);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 16384, 4096, true).threads_per_row, 1024);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 16384, 16384, true).reload);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 8192, 1024, true).threads_per_row, 512);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 8192, 4096, true).reload);
  EXPECT_EQ(cuda::ChooseStagedShape(DType::kBFloat16, 16384, 4096, true).rows_per_tile, 0);
  EXPECT_EQ(cuda::ChooseStagedShape(DType::kFloat32, 16384, 4096, false).rows_per_tile, 0);
  EXPECT_GT(cuda::ChooseStagedShape(DType::kFloat32, 16384, 1024, false).rows_per_tile, 0);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 4096, 1000, false).reload);  // few rows
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 512, 65536, false).reload);
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 20000, 65536, false).reload);
  cuda::RmsNormOptions off;
  off.reload = Reload::kOff;
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kBFloat16, 7168, 65536, false, off).reload);
  cuda::RmsNormOptions on;
  on.reload = Reload::kOn;
  const cuda::KernelShape fused = cuda::ChooseKernelShape(DType::kBFloat16, 3000, 7, true, on);
  EXPECT_TRUE(fused.reload);
  EXPECT_EQ(fused.vectors_per_thread, 2);  // the automatic count: two at H 3000 below 4096 rows
  EXPECT_EQ(fused.threads_per_row, 192);   // 375 vectors in whole warps
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 2048, 7, true, on).vectors_per_thread, 1);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 16384, 7, true, on).vectors_per_thread, 4);
  on.vectors_per_thread = 1;
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 8192, 7, false, on).threads_per_row, 1024);
  // fp32 H 16384 (4096 vectors): four vectors per thread.
  on.vectors_per_thread = 0;
  const cuda::KernelShape fp32_wide = cuda::ChooseKernelShape(DType::kFloat32, 16384, 7, true, on);
  EXPECT_TRUE(fp32_wide.reload);
  EXPECT_EQ(fp32_wide.vectors_per_thread, 4);
  EXPECT_EQ(fp32_wide.threads_per_block, 1024);
  on.vectors_per_thread = 4;
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 4096, 7, true, on).threads_per_row, 128);
  on.vectors_per_thread = 8;
  EXPECT_FALSE(cuda::ChooseKernelShape(DType::kFloat32, 4096, 7, false, on).reload);
}

// The automatic choice splits each row over a cluster of CTAs only for rows that move >= 96 KB
// (x, output, and r and residual_out with a residual) in launches of few rows (at most 128 CTAs in
// all); cluster_ctas forces or forbids it.
// The cluster kernel's automatic rule, with the split-row kernel (which takes most of its shapes
// since v11) ruled out; then the shapes it keeps under the whole automatic choice.
TEST(RmsNormCudaArguments, ClusterChoice) {
  {
    const cuda::KernelShape kept = cuda::ChooseKernelShape(DType::kFloat32, 16384, 1, true);
    EXPECT_EQ(kept.cluster_ctas, 8);  // 256 KB
    EXPECT_EQ(kept.split_ctas, 1);
    EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 16384, 8, true).cluster_ctas, 8);
  }
  cuda::RmsNormOptions no_split;
  no_split.split_ctas = 1;
  auto choose = [&](DType dtype, int64_t hidden, int64_t rows, bool residual) {
    return cuda::ChooseKernelShape(dtype, hidden, rows, residual, no_split);
  };
  const cuda::KernelShape one = choose(DType::kFloat32, 7168, 1, true);
  EXPECT_EQ(one.cluster_ctas, 8);  // 1792 vectors: 224 per CTA
  EXPECT_EQ(one.threads_per_block, 224);
  EXPECT_EQ(one.threads_per_row, 8 * 224);
  EXPECT_EQ(choose(DType::kFloat32, 7168, 8, true).cluster_ctas, 8);
  EXPECT_EQ(choose(DType::kFloat32, 7168, 32, true).cluster_ctas, 4);
  // 64 rows: a cluster of 2 would leave 896 vectors per CTA, over 512 threads.
  EXPECT_EQ(choose(DType::kFloat32, 7168, 64, true).cluster_ctas, 1);
  const cuda::KernelShape wide = choose(DType::kBFloat16, 16384, 1, true);
  EXPECT_EQ(wide.cluster_ctas, 8);
  EXPECT_EQ(wide.threads_per_block, 256);
  EXPECT_EQ(choose(DType::kBFloat16, 16384, 1, false).cluster_ctas, 1);  // 64 KB
  EXPECT_EQ(choose(DType::kBFloat16, 7168, 1, true).cluster_ctas, 1);    // 56 KB
  EXPECT_EQ(choose(DType::kFloat32, 20000, 1, true).cluster_ctas, 1);
  EXPECT_EQ(choose(DType::kFloat32, 7168, 1000, true).cluster_ctas, 1);
  cuda::RmsNormOptions never;
  never.cluster_ctas = 1;
  never.split_ctas = 1;
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 7168, 1, true, never).cluster_ctas, 1);
  cuda::RmsNormOptions forced;
  forced.cluster_ctas = 2;
  const cuda::KernelShape two = cuda::ChooseKernelShape(DType::kFloat32, 3000, 5000, true, forced);
  EXPECT_EQ(two.cluster_ctas, 2);
  EXPECT_EQ(two.threads_per_block, 384);  // 750 vectors: 375 per CTA in whole warps
  forced.cluster_ctas = 3;                // not a supported size
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 4096, 1, false, forced).threads_per_row, 0);
  forced.cluster_ctas = 8;  // 8192 vectors: 1024 per CTA, over 512 threads
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 65536, 1, false, forced).threads_per_row, 0);
}

// The split-row kernel's shapes: C as forced (fewer only where the row has fewer vectors), G the
// fewest vectors per thread in 512 threads or the threads_per_row given, invalid overrides
// refused, and the automatic choice within 128 CTAs.
TEST(RmsNormCudaArguments, SplitRowChoice) {
  cuda::RmsNormOptions forced;
  forced.split_ctas = 8;
  // bf16 H 7168: 896 vectors, 448 threads of 2.
  const cuda::KernelShape eight = cuda::ChooseKernelShape(DType::kBFloat16, 7168, 1, true, forced);
  EXPECT_EQ(eight.split_ctas, 8);
  EXPECT_EQ(eight.threads_per_block, 448);
  EXPECT_EQ(eight.vectors_per_thread, 2);
  forced.split_ctas = 4;
  forced.threads_per_row = 128;  // fp32 H 4096: 1024 vectors, 128 threads of 8
  const cuda::KernelShape four =
      cuda::ChooseKernelShape(DType::kFloat32, 4096, 5000, false, forced);
  EXPECT_EQ(four.split_ctas, 4);
  EXPECT_EQ(four.threads_per_block, 128);
  EXPECT_EQ(four.vectors_per_thread, 8);
  forced.threads_per_row = 96;  // fp32 H 16384: 4096 vectors would need 43 per thread
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 16384, 1, false, forced).threads_per_row, 0);
  forced.threads_per_row = 100;  // not whole warps
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kFloat32, 4096, 1, false, forced).threads_per_row, 0);
  forced.threads_per_row = 0;
  forced.split_ctas = 2;  // bf16 H 8: one vector, nothing to split
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 8, 1, false, forced).split_ctas, 1);
  EXPECT_GT(cuda::ChooseKernelShape(DType::kBFloat16, 8, 1, false, forced).threads_per_row, 0);
  const cuda::KernelShape wide = cuda::ChooseKernelShape(DType::kFloat32, 16384, 1, false, forced);
  EXPECT_EQ(wide.split_ctas, 2);  // 4096 vectors: 512 threads of 8
  EXPECT_EQ(wide.vectors_per_thread, 8);
  forced.split_ctas = 9;
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 4096, 1, false, forced).threads_per_row, 0);
  forced.split_ctas = 4;
  forced.cluster_ctas = 4;  // two ways of splitting a row at once
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 4096, 1, false, forced).threads_per_row, 0);
  // The automatic choice (call split_b): 8 CTAs per row up to 4 rows, 4 up to 8, 2 up to 16, for
  // rows that move 10 KB to 128 KB; 256 threads where they hold the row in 4 vectors each.
  const cuda::KernelShape fused_one = cuda::ChooseKernelShape(DType::kBFloat16, 7168, 1, true);
  EXPECT_EQ(fused_one.split_ctas, 8);
  EXPECT_EQ(fused_one.threads_per_block, 256);
  EXPECT_EQ(fused_one.vectors_per_thread, 4);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 7168, 4, false).split_ctas, 8);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 7168, 8, false).split_ctas, 4);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 7168, 16, false).split_ctas, 2);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 7168, 17, false).split_ctas, 1);
  const cuda::KernelShape fp32_one = cuda::ChooseKernelShape(DType::kFloat32, 7168, 1, false);
  EXPECT_EQ(fp32_one.split_ctas, 8);  // 1792 vectors: the fewest in 512 threads, 448 of 4
  EXPECT_EQ(fp32_one.threads_per_block, 448);
  EXPECT_EQ(fp32_one.vectors_per_thread, 4);
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 1024, 1, true).split_ctas, 1);    // 8 KB
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 3000, 1, false).split_ctas, 8);   // 12 KB
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 16384, 1, true).split_ctas, 1);   // 128 KB
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 16384, 1, false).split_ctas, 8);  // 64 KB
  cuda::RmsNormOptions tuned;  // another tuning override: no automatic split
  tuned.vectors_per_thread = 2;
  EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 4096, 1, false, tuned).split_ctas, 1);
  cuda::RmsNormOptions never;
  never.split_ctas = 1;
  for (const int64_t rows : {1, 8, 16, 64, 128}) {
    EXPECT_EQ(cuda::ChooseKernelShape(DType::kBFloat16, 4096, rows, false, never).split_ctas, 1);
    const cuda::KernelShape automatic =
        cuda::ChooseKernelShape(DType::kBFloat16, 4096, rows, false);
    EXPECT_LE(rows * automatic.split_ctas, 128) << rows;
  }
}

TEST(RmsNormCudaArguments, ShapesCoverTheRow) {
  for (const DType dtype : kDTypes) {
    for (int64_t hidden = 1; hidden <= cuda::kMaxHidden; hidden += 1 + hidden / 7) {
      for (const int64_t rows : {1, 1000, 100000}) {
        const cuda::KernelShape s = cuda::ChooseKernelShape(dtype, hidden, rows, rows == 1000);
        ASSERT_GT(s.threads_per_row, 0) << hidden;
        if (s.two_pass) {
          if (!s.lean) EXPECT_GT(hidden, 16384);
          EXPECT_LE(s.threads_per_block, 512);
          EXPECT_EQ(s.threads_per_block % 32, 0);
          continue;
        }
        const int64_t vec = 16 / static_cast<int64_t>(ItemSize(dtype));
        EXPECT_GE(int64_t{s.threads_per_row} * s.vectors_per_thread * vec, hidden) << hidden;
        EXPECT_LE(s.threads_per_block, s.reload ? 1024 : 512);
        if (s.split_ctas > 1) {  // C blocks of G threads, each holding the whole row
          EXPECT_LE(rows * s.split_ctas, 128) << hidden;
          EXPECT_EQ(s.threads_per_block, s.threads_per_row);
          EXPECT_EQ(s.threads_per_block % 32, 0);
          continue;
        }
        if (s.cluster_ctas > 1) {  // one row over C blocks
          EXPECT_LE(rows * s.cluster_ctas, 128) << hidden;
          EXPECT_EQ(s.threads_per_row, s.cluster_ctas * s.threads_per_block);
          EXPECT_EQ(s.threads_per_block % 32, 0);
          continue;
        }
        EXPECT_EQ(s.threads_per_block % s.threads_per_row, 0);
      }
    }
  }
}

}  // namespace
}  // namespace normd::gputest
