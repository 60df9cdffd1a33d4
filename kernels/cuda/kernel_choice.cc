// Configurations resolved into launches (threads per row, rows per block, blocks), the candidates
// the sweep times, the default for GPUs without a table, and the choice (kernel_config.h). Host
// code only.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/kernel_config.h"
#include "kernels/cuda/kernel_limits.h"
#include "kernels/cuda/kernel_table.h"

namespace normd::cuda::internal {
namespace {

// Where the row group is smaller than this, several rows share a block (KernelConfig's
// block_threads); from here a row has its own block.
constexpr int64_t kOwnBlockThreads = 128;
// Cluster candidates are timed up to this many rows (past it a launch has enough rows to fill the
// GPU without splitting them), and at any rows where a row is longer than the register kernels
// hold in one CTA (its alternative, the loop kernel, reads it twice).
constexpr int64_t kClusterMaxRows = 512;
constexpr int64_t kClusterAnyRowsMinRowBytes = 32 << 10;

int64_t PowerOfTwoCeil(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

// Threads of a row group covering `slots` vectors: a power of two up to 32, else whole warps.
int64_t GroupThreadsFor(int64_t slots) {
  return slots <= 32 ? PowerOfTwoCeil(slots) : CeilDiv(slots, 32) * 32;
}

// 16-byte vectors (element-path slots of as many elements) per row.
int64_t VectorsPerRow(DType dtype, int64_t hidden) {
  return CeilDiv(hidden, 16 / static_cast<int64_t>(ItemSize(dtype)));
}

bool RowVectorsWhole(DType dtype, int64_t hidden) {
  return (hidden * static_cast<int64_t>(ItemSize(dtype))) % 16 == 0;
}

// Row groups of g threads in blocks of the config's block_threads (one row per block from
// kOwnBlockThreads).
bool PlaceRowGroups(int64_t g, const KernelConfig& c, const LaunchTraits& t, LaunchShape* shape) {
  if (c.block_threads != 128 && c.block_threads != 256) return false;
  int64_t rows_per_block = 1;
  if (g < kOwnBlockThreads) {
    rows_per_block = c.block_threads / g;
  } else {
    shape->config.block_threads = 256;  // no say here: one configuration per launch shape
  }
  shape->threads_per_row = static_cast<int>(g);
  shape->rows_per_block = static_cast<int>(rows_per_block);
  shape->threads_per_block = static_cast<int>(g * rows_per_block);
  shape->blocks = CeilDiv(t.rows, rows_per_block);
  return shape->blocks <= INT_MAX;
}

}  // namespace

LaunchShape ResolveShape(const KernelConfig& c, const LaunchTraits& t, const DeviceFeatures& d) {
  LaunchShape shape;
  shape.config = c;
  const LaunchShape invalid;
  if (!ValidDType(t.dtype) || t.hidden < 1 || t.hidden > kMaxHidden || t.rows < 0) return invalid;
  const int64_t vectors = VectorsPerRow(t.dtype, t.hidden);
  const bool fp32 = t.dtype == DType::kFloat32;
  switch (c.kind) {
    case KernelKind::kRows:
    case KernelKind::kReload: {
      const bool reload = c.kind == KernelKind::kReload;
      const int n = c.vectors;
      // Eight vectors per thread: held fp32 rows only; the reload builds take the vector path only.
      if ((n != 1 && n != 2 && n != 4 && !(n == 8 && fp32 && !reload)) ||
          (reload && t.alignment != Alignment::kVector)) {
        return invalid;
      }
      const int64_t limit = !reload                ? kRowsMaxThreads
                            : n == 2 && t.residual ? kReloadTwoWithResidualMaxThreads
                                                   : kReloadMaxThreads;
      const int64_t g = GroupThreadsFor(CeilDiv(vectors, n));
      if (g > limit || !PlaceRowGroups(g, c, t, &shape)) return invalid;
      shape.config.ctas = 0;
      shape.config.lean = false;
      return shape;
    }
    case KernelKind::kLoop: {
      const int64_t g =
          c.lean ? std::min<int64_t>(kLoopMaxThreads, CeilDiv(vectors, 32) * 32) : kLoopMaxThreads;
      if (t.rows > INT_MAX) return invalid;
      shape.config = KernelConfig{};
      shape.config.kind = KernelKind::kLoop;
      shape.config.vectors = 0;
      shape.config.block_threads = 0;
      shape.config.lean = c.lean;
      shape.threads_per_row = static_cast<int>(g);
      shape.rows_per_block = 1;
      shape.threads_per_block = static_cast<int>(g);
      shape.blocks = t.rows;
      return shape;
    }
    case KernelKind::kCluster: {
      const int n = c.vectors;
      const int64_t ctas = c.ctas;
      if (!d.clusters || t.alignment != Alignment::kVector || !RowVectorsWhole(t.dtype, t.hidden)) {
        return invalid;
      }
      if ((ctas != 2 && ctas != 4 && ctas != 8 && ctas != 16) || vectors < ctas) return invalid;
      if (n != 1 && n != 2 && n != 4) return invalid;
      const int64_t g = std::max<int64_t>(32, CeilDiv(CeilDiv(CeilDiv(vectors, ctas), n), 32) * 32);
      if (g > kClusterMaxThreads || t.rows * ctas > INT_MAX) return invalid;
      shape.config.block_threads = 0;
      shape.config.lean = false;
      shape.threads_per_row = static_cast<int>(g);
      shape.rows_per_block = 1;
      shape.threads_per_block = static_cast<int>(g);
      shape.blocks = t.rows * ctas;
      return shape;
    }
  }
  return invalid;
}

std::vector<KernelConfig> CandidateConfigs(const LaunchTraits& t, const DeviceFeatures& d) {
  std::vector<KernelConfig> all;
  const bool fp32 = t.dtype == DType::kFloat32;
  for (const int n : {1, 2, 4, 8}) {
    if (n == 8 && !fp32) continue;
    for (const int b : {256, 128}) {
      KernelConfig c;
      c.kind = KernelKind::kRows;
      c.vectors = n;
      c.block_threads = b;
      all.push_back(c);
    }
  }
  for (const int n : {1, 2, 4}) {
    for (const int b : {256, 128}) {
      KernelConfig c;
      c.kind = KernelKind::kReload;
      c.vectors = n;
      c.block_threads = b;
      all.push_back(c);
    }
  }
  for (const bool lean : {false, true}) {
    KernelConfig c;
    c.kind = KernelKind::kLoop;
    c.lean = lean;
    all.push_back(c);
  }
  if (t.rows <= kClusterMaxRows ||
      t.hidden * static_cast<int64_t>(ItemSize(t.dtype)) > kClusterAnyRowsMinRowBytes) {
    for (const int ctas : {2, 4, 8, 16}) {
      for (const int n : {1, 2, 4}) {
        KernelConfig c;
        c.kind = KernelKind::kCluster;
        c.ctas = ctas;
        c.vectors = n;
        all.push_back(c);
      }
    }
  }
  // Only those that can run, each launch shape once.
  std::vector<KernelConfig> out;
  std::vector<LaunchShape> shapes;
  for (const KernelConfig& c : all) {
    const LaunchShape s = ResolveShape(c, t, d);
    if (!s.valid()) continue;
    const bool seen = std::any_of(shapes.begin(), shapes.end(), [&](const LaunchShape& o) {
      return o.config == s.config && o.threads_per_row == s.threads_per_row &&
             o.rows_per_block == s.rows_per_block;
    });
    if (seen) continue;
    shapes.push_back(s);
    out.push_back(s.config);
  }
  return out;
}

// Without a table: hold the row where the launch cannot fill the GPU (its time is one round trip
// to memory), re-read it from L1 where it can (occupancy: more rows in flight per
// multiprocessor), and on the element path hold one vector's worth of elements per thread (more
// per thread costs more than the loop's second read); walk the row in a loop where it fits none.
// Against the fastest configuration without clusters at each point of the H200's sweep it takes
// about 1.1x the time (geometric mean), at worst 2.3x (odd H of one vector per 16 threads).
KernelConfig DefaultConfig(const LaunchTraits& t, const DeviceFeatures& d) {
  KernelConfig c;
  const int64_t vectors = VectorsPerRow(t.dtype, t.hidden);
  const int64_t multiprocessors = d.multiprocessors > 0 ? d.multiprocessors : 100;
  // Half the GPU's resident threads (2048 per multiprocessor) at two vectors per thread.
  const bool latency_bound = t.rows * CeilDiv(vectors, 2) < multiprocessors * 1024;
  if (t.alignment != Alignment::kVector) {
    c.kind = KernelKind::kRows;
    c.vectors = 1;
    c.block_threads = 128;
    if (ResolveShape(c, t, d).valid()) return c;
  } else if (latency_bound) {
    for (const int n : {1, 2, 4}) {
      c = KernelConfig{};
      c.kind = KernelKind::kRows;
      c.vectors = n;
      if (GroupThreadsFor(CeilDiv(vectors, n)) <= 256 && ResolveShape(c, t, d).valid()) return c;
    }
  } else {
    for (const int n : {2, 4}) {
      c = KernelConfig{};
      c.kind = KernelKind::kReload;
      c.vectors = n;
      if (ResolveShape(c, t, d).valid()) return c;
    }
  }
  c = KernelConfig{};
  c.kind = KernelKind::kLoop;
  c.lean = true;
  return c;
}

namespace {

// Rows in quarter octaves: the choice depends on rows only through such distances, and a cache
// keyed by the bucket stays small while every row count of a bucket gets the same answer.
int RowsBucket(int64_t rows) {
  return rows <= 1 ? 0 : static_cast<int>(std::floor(4.0 * std::log2(static_cast<double>(rows))));
}

int64_t BucketRows(int bucket) {
  return static_cast<int64_t>(std::llround(std::exp2(bucket / 4.0)));
}

struct ChoiceKey {
  int generation;
  DType dtype;
  int64_t hidden;
  int bucket;
  bool residual, fp32_weights, table, clusters;
  Alignment alignment;
  int sm, multiprocessors;
  bool operator==(const ChoiceKey& o) const {
    return generation == o.generation && dtype == o.dtype && hidden == o.hidden &&
           bucket == o.bucket && residual == o.residual && fp32_weights == o.fp32_weights &&
           table == o.table && clusters == o.clusters && alignment == o.alignment && sm == o.sm &&
           multiprocessors == o.multiprocessors;
  }
};

struct ChoiceKeyHash {
  size_t operator()(const ChoiceKey& k) const {
    size_t h = std::hash<int64_t>()(k.hidden * 131 + k.bucket);
    h = h * 31 + static_cast<size_t>(k.dtype) * 7 + static_cast<size_t>(k.alignment);
    h = h * 31 + (k.residual ? 1 : 0) + (k.fp32_weights ? 2 : 0) + (k.table ? 4 : 0) +
        (k.clusters ? 8 : 0);
    return h * 31 + static_cast<size_t>(k.sm * 1000 + k.multiprocessors + k.generation * 7919);
  }
};

}  // namespace

KernelConfig ChooseConfig(const LaunchTraits& traits, const DeviceFeatures& device) {
  const ChoiceKey key{
      TableGeneration(), traits.dtype,        traits.hidden,         RowsBucket(traits.rows),
      traits.residual,   traits.fp32_weights, traits.table,          device.clusters,
      traits.alignment,  device.sm,           device.multiprocessors};
  static std::mutex mutex;
  static std::unordered_map<ChoiceKey, KernelConfig, ChoiceKeyHash> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = cache.find(key); it != cache.end()) return it->second;
  }
  LaunchTraits at_bucket = traits;
  at_bucket.rows = traits.rows <= 1 ? traits.rows : BucketRows(key.bucket);
  KernelConfig chosen;
  const KernelTable* table = BuiltInTable(device.sm);
  if (table == nullptr || !table->Lookup(at_bucket, device, &chosen)) {
    chosen = DefaultConfig(at_bucket, device);
  }
  // The bucket's row count and the launch's resolve alike except for clusters of more CTAs than a
  // grid holds; the default (never a cluster) covers that.
  if (!ResolveShape(chosen, traits, device).valid()) chosen = DefaultConfig(traits, device);
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() >= 8192) cache.clear();
  cache.emplace(key, chosen);
  return chosen;
}

LaunchShape ChosenShape(const LaunchTraits& traits, const DeviceFeatures& device) {
  return ResolveShape(ChooseConfig(traits, device), traits, device);
}

}  // namespace normd::cuda::internal
