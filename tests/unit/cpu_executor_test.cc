// CpuExecutor (server/executors/cpu_executor.h) computes a launch from the requests' bytes where
// they arrived. An input, residual or inline weight at an address that is not a multiple of its
// element size (a slice of the received message starts anywhere; the weight has been read in place
// since 2026-12-02) must give the same bytes as aligned copies, without the kernel reading a
// misaligned element (UBSan, in the asan preset, reports such a read: fuzz_normalize_request found
// the weight's first).
#include "server/executors/cpu_executor.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_rmsnorm.h"
#include "kernels/dtype.h"
#include "server/batching/batch_former.h"
#include "server/observability/metrics.h"

namespace normd {
namespace {

// `bytes` copied to one byte past an aligned address of `storage` (so misaligned for every dtype).
const void* Misaligned(const std::string& bytes, std::string& storage) {
  storage.assign(bytes.size() + 1, '\0');
  std::memcpy(storage.data() + 1, bytes.data(), bytes.size());
  return storage.data() + 1;
}

std::string RandomElements(DType dtype, int64_t count, std::mt19937& random) {
  std::normal_distribution<float> normal;
  std::vector<float> values(static_cast<size_t>(count));
  for (float& v : values) v = 1.0f + 0.5f * normal(random);
  std::string bytes(static_cast<size_t>(count) * ItemSize(dtype), '\0');
  for (size_t i = 0; i < values.size(); ++i) StoreFromFloat(bytes.data(), dtype, i, values[i]);
  return bytes;
}

TEST(CpuExecutorTest, MisalignedInputResidualAndWeightGiveTheAlignedResult) {
  constexpr int64_t kRows = 3, kHidden = 37;  // 37: the kernels' scalar tail runs too
  std::mt19937 random(7);
  for (const DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    for (const DType weight_dtype : {dtype, DType::kFloat32}) {
      SCOPED_TRACE(testing::Message()
                   << DTypeName(dtype) << " input, " << DTypeName(weight_dtype) << " weight");
      const std::string input = RandomElements(dtype, kRows * kHidden, random);
      const std::string residual = RandomElements(dtype, kRows * kHidden, random);
      const std::string weight = RandomElements(weight_dtype, kHidden, random);
      const size_t out_bytes = input.size();

      // What the kernel writes from aligned copies.
      std::vector<char> expected(out_bytes), expected_residual_out(out_bytes);
      RmsNormCpuRows(dtype, kHidden,
                     RmsNormSegment{input.data(), expected.data(), residual.data(),
                                    expected_residual_out.data(), weight.data(), 0, kRows, 1e-6f,
                                    0.5f, weight_dtype},
                     0, kRows);

      // The same request with every tensor one byte off alignment.
      std::string input_at, residual_at, weight_at;
      auto item = std::make_unique<WorkItem>();
      ValidatedRequest& r = item->request;
      r.dtype = dtype;
      r.rows = kRows;
      r.hidden = kHidden;
      r.input =
          TensorBytes::Contiguous(Misaligned(input, input_at), static_cast<int64_t>(input.size()));
      r.residual = TensorBytes::Contiguous(Misaligned(residual, residual_at),
                                           static_cast<int64_t>(residual.size()));
      // The weight in two pieces as well, as one that straddles two received slices arrives.
      const char* weight_bytes = static_cast<const char*>(Misaligned(weight, weight_at));
      r.weight = TensorBytes::Empty();
      r.weight.Append(weight_bytes, 3);
      r.weight.Append(weight_bytes + 3, static_cast<int64_t>(weight.size()) - 3);
      r.weight_dtype = weight_dtype;
      r.eps = 1e-6f;
      r.weight_offset = 0.5f;
      std::vector<char> output(out_bytes), residual_out(out_bytes);
      item->output = output.data();
      item->residual_out = residual_out.data();
      Launch launch;
      launch.dtype = dtype;
      launch.hidden = kHidden;
      launch.rows = kRows;
      launch.items.push_back(std::move(item));

      CpuExecutor executor(2);
      StageTimes stages;
      ASSERT_TRUE(executor.Start(launch, stages).ok());
      EXPECT_EQ(output, expected);
      EXPECT_EQ(residual_out, expected_residual_out);
    }
  }
}

}  // namespace
}  // namespace normd
