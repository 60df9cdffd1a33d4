#include "tests/gpu/gpu_test_util.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>

#include "kernels/cuda/kernel_table.h"
#include "kernels/reference.h"

namespace normd::gputest {

std::string NoDeviceReason() {
  static const std::string reason = [] {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) return std::string(cudaGetErrorString(err));
    if (count == 0) return std::string("cudaGetDeviceCount reports 0 devices");
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess)
      return std::string("cannot query device 0");
    std::printf("[gpu] device 0: %s, sm_%d%d, %d SMs\n", prop.name, prop.major, prop.minor,
                prop.multiProcessorCount);
    return std::string();
  }();
  return reason;
}

DeviceBuffer::DeviceBuffer(size_t bytes, size_t offset) : bytes_(bytes), offset_(offset) {
  void* p = nullptr;
  if (cudaMalloc(&p, bytes + offset + 2 * kGuardBytes + 256) != cudaSuccess) return;
  base_ = static_cast<unsigned char*>(p);
  data_ =
      base_ + kGuardBytes + offset;  // cudaMalloc is 256-aligned; kGuardBytes keeps 16-alignment
}

DeviceBuffer::~DeviceBuffer() {
  if (base_ != nullptr) cudaFree(base_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) cudaFree(base_);
    base_ = other.base_;
    data_ = other.data_;
    bytes_ = other.bytes_;
    offset_ = other.offset_;
    other.base_ = nullptr;
    other.data_ = nullptr;
  }
  return *this;
}

void DeviceBuffer::Upload(const void* host, size_t bytes) const {
  EXPECT_EQ(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
}

void DeviceBuffer::Download(void* host, size_t bytes) const {
  EXPECT_EQ(cudaMemcpy(host, data_, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
}

void DeviceBuffer::Fill(unsigned char byte) const {
  EXPECT_EQ(cudaMemset(data_, byte, bytes_), cudaSuccess);
}

void DeviceBuffer::ArmGuards() const {
  auto* data = static_cast<unsigned char*>(data_);
  EXPECT_EQ(cudaMemset(base_, kGuardByte, data - base_), cudaSuccess);
  EXPECT_EQ(cudaMemset(data + bytes_, kGuardByte, kGuardBytes), cudaSuccess);
}

bool DeviceBuffer::GuardsIntact() const {
  auto* data = static_cast<unsigned char*>(data_);
  const size_t before = static_cast<size_t>(data - base_);
  std::vector<unsigned char> head(before), tail(kGuardBytes);
  if (cudaMemcpy(head.data(), base_, before, cudaMemcpyDeviceToHost) != cudaSuccess) return false;
  if (cudaMemcpy(tail.data(), data + bytes_, kGuardBytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
    return false;
  }
  const auto intact = [](const std::vector<unsigned char>& v) {
    return std::all_of(v.begin(), v.end(), [](unsigned char b) { return b == kGuardByte; });
  };
  return intact(head) && intact(tail);
}

uint64_t Random::Next() {
  // splitmix64
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

float Random::Uniform(float lo, float hi) {
  return lo + (hi - lo) * static_cast<float>(Next() >> 40) * 0x1p-24f;
}

HostBytes RandomTensor(DType dtype, size_t count, float lo, float hi, Random& rng) {
  HostBytes bytes(count * ItemSize(dtype));
  for (size_t i = 0; i < count; ++i) StoreFromFloat(bytes.data(), dtype, i, rng.Uniform(lo, hi));
  return bytes;
}

uint64_t ProcessSeed() {
  static const uint64_t seed = [] {
    uint64_t s = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    if (const char* env = std::getenv("NORMD_TEST_SEED")) s = std::strtoull(env, nullptr, 10);
    std::printf("[gpu] NORMD_TEST_SEED=%llu\n", static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

namespace {

// The spacing of dtype's values at magnitude a (subnormal spacing below the normal range).
double Ulp(DType dtype, double a) {
  int exponent = 0;
  std::frexp(a, &exponent);  // a = m * 2^exponent, m in [0.5, 1)
  const int e = exponent - 1;
  switch (dtype) {
    case DType::kBFloat16:
      return std::ldexp(1.0, std::max(e, -126) - 7);
    case DType::kFloat16:
      return std::ldexp(1.0, std::max(e, -14) - 10);
    case DType::kFloat32:
      return std::ldexp(1.0, std::max(e, -126) - 23);
  }
  return 0.0;
}

bool Close(DType dtype, double ref, double got, double row_scale) {
  if (std::isnan(ref)) return std::isnan(got);
  if (std::isinf(ref)) return got == ref;
  if (!std::isfinite(got)) return false;
  const double diff = std::fabs(got - ref);
  if (dtype == DType::kFloat32) return diff <= 1e-5 * std::fabs(ref) + 1e-7 * row_scale;
  return diff <= Ulp(dtype, std::max(std::fabs(ref), std::fabs(got)));
}

}  // namespace

int64_t CheckRows(DType dtype, int64_t hidden, const RmsNormSegment& host_segment,
                  const unsigned char* out_bytes, const unsigned char* ro_bytes,
                  const std::vector<int64_t>& rows_to_check, const std::string& context) {
  const auto h = static_cast<size_t>(hidden);
  const size_t item = ItemSize(dtype);
  const bool has_residual = host_segment.residual != nullptr && ro_bytes != nullptr;
  std::vector<double> ref(h), ref_ro(h);
  int64_t bad = 0;
  int reported = 0;
  for (const int64_t row : rows_to_check) {
    RmsNormSegment one = host_segment;
    one.rows = 1;
    one.input = static_cast<const unsigned char*>(host_segment.input) + row * h * item;
    if (host_segment.residual != nullptr) {
      one.residual = static_cast<const unsigned char*>(host_segment.residual) + row * h * item;
    }
    RmsNormReference(dtype, hidden, one, ref.data(), has_residual ? ref_ro.data() : nullptr);
    double scale = 0.0;
    for (size_t i = 0; i < h; ++i) {
      if (std::isfinite(ref[i])) scale = std::max(scale, std::fabs(ref[i]));
    }
    for (size_t i = 0; i < h; ++i) {
      const size_t at = static_cast<size_t>(row) * h + i;
      const double got = LoadAsFloat(out_bytes, dtype, at);
      bool ok = Close(dtype, ref[i], got, scale);
      double got_ro = 0.0;
      if (has_residual) {
        got_ro = LoadAsFloat(ro_bytes, dtype, at);
        ok = ok && Close(dtype, ref_ro[i], got_ro, 0.0);
      }
      if (!ok) {
        ++bad;
        if (reported++ < 5) {
          ADD_FAILURE() << context << ": row " << row << " element " << i << ": y " << got
                        << " vs ref " << ref[i]
                        << (has_residual ? "; residual_out " + std::to_string(got_ro) + " vs ref " +
                                               std::to_string(ref_ro[i])
                                         : std::string());
        }
      }
    }
  }
  return bad;
}

std::vector<int64_t> RowsToCheck(int64_t rows, int64_t hidden, Random& rng,
                                 const std::vector<int64_t>& extra) {
  std::set<int64_t> picked;
  if (rows * hidden <= (int64_t{1} << 21)) {
    for (int64_t r = 0; r < rows; ++r) picked.insert(r);
  } else {
    for (int64_t r = 0; r < std::min<int64_t>(48, rows); ++r) {
      picked.insert(r);
      picked.insert(rows - 1 - r);
    }
    for (int i = 0; i < 96; ++i) picked.insert(static_cast<int64_t>(rng.Next() % rows));
  }
  for (const int64_t r : extra) {
    if (r >= 0 && r < rows) picked.insert(r);
  }
  return {picked.begin(), picked.end()};
}

int64_t CountPoisoned(DType dtype, const unsigned char* bytes, size_t count) {
  int64_t n = 0;
  if (ItemSize(dtype) == 4) {
    for (size_t i = 0; i < count; ++i) {
      uint32_t v;
      std::memcpy(&v, bytes + 4 * i, 4);
      n += v == 0xFFFFFFFFu;
    }
  } else {
    for (size_t i = 0; i < count; ++i) {
      uint16_t v;
      std::memcpy(&v, bytes + 2 * i, 2);
      n += v == 0xFFFFu;
    }
  }
  return n;
}

namespace {

// NORMD_KERNEL_TABLE_FILE: a choice table for this GPU to take instead of the one compiled in (a
// table just swept on the GPU machine, tested before it is built into the library).
class TableFromFile : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* path = std::getenv("NORMD_KERNEL_TABLE_FILE");
    if (path == nullptr || !NoDeviceReason().empty()) return;
    FILE* f = std::fopen(path, "r");
    std::string text;
    char buffer[4096];
    size_t n = 0;
    while (f != nullptr && (n = std::fread(buffer, 1, sizeof buffer, f)) > 0)
      text.append(buffer, n);
    if (f != nullptr) std::fclose(f);
    int device = 0, major = 0, minor = 0;
    std::string error = f == nullptr ? "cannot open it" : "";
    if (f != nullptr &&
        (cudaGetDevice(&device) != cudaSuccess ||
         cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
         cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess ||
         !cuda::internal::OverrideTableForBenchmarks(major * 10 + minor, text, &error))) {
      std::fprintf(stderr, "NORMD_KERNEL_TABLE_FILE=%s: %s\n", path, error.c_str());
      std::abort();
    }
    std::printf("[gpu] choice table from %s\n", path);
  }
};

[[maybe_unused]] ::testing::Environment* const kTableFromFile =
    ::testing::AddGlobalTestEnvironment(new TableFromFile);

}  // namespace

}  // namespace normd::gputest
