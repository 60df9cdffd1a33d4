// Writes the fuzzers' seed corpus (tests/fuzz/corpus/<target>/): a few valid requests of every
// kind, so that fuzzing starts past the decoder and the validator's early refusals instead of
// having to find its way there, and a few byte strings for the other targets.
//
//   build/fuzz/tests/fuzz/make_seed_corpus tests/fuzz/corpus
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "kernels/dtype.h"
#include "normd/v1/normd.pb.h"
#include "server/rpc/weight_registry.h"

namespace {

using normd::DType;

void Write(const std::filesystem::path& dir, const std::string& name, const std::string& bytes) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
}

normd::v1::Tensor MakeTensor(DType dtype, std::initializer_list<int64_t> shape) {
  normd::v1::Tensor t;
  t.set_dtype(static_cast<normd::v1::DType>(dtype));
  int64_t count = 1;
  for (int64_t d : shape) {
    t.add_shape(d);
    count *= d;
  }
  std::string data(static_cast<size_t>(count) * normd::ItemSize(dtype), '\0');
  for (int64_t i = 0; i < count; ++i) {
    normd::StoreFromFloat(data.data(), dtype, static_cast<size_t>(i),
                          static_cast<float>(i % 7) * 0.25f - 0.5f);
  }
  t.set_data(data);
  return t;
}

// The ids of the weights fuzz_normalize_request registers (same bytes as there).
std::string F32WeightId() {
  std::string f32(8 * 4, '\0');
  for (int i = 0; i < 8; ++i) {
    const float v = 0.5f + static_cast<float>(i);
    std::memcpy(&f32[static_cast<size_t>(i) * 4], &v, 4);
  }
  return normd::WeightRegistry::ContentId(DType::kFloat32, 8, f32);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_seed_corpus CORPUS_DIR\n";
    return 2;
  }
  const std::filesystem::path root = argv[1];
  const std::filesystem::path requests = root / "fuzz_normalize_request";
  int k = 0;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (bool residual : {false, true}) {
      normd::v1::NormalizeRequest r;
      *r.mutable_input() = MakeTensor(dtype, {3, 8});
      *r.mutable_weight() = MakeTensor(residual ? dtype : DType::kFloat32, {8});
      if (residual) *r.mutable_residual() = MakeTensor(dtype, {3, 8});
      r.set_eps(1e-6f);
      r.set_weight_offset(residual ? 1.0f : 0.0f);
      r.set_request_id("seed");
      Write(requests, "valid_" + std::to_string(k++), r.SerializeAsString());
    }
  }
  normd::v1::NormalizeRequest by_id;
  *by_id.mutable_input() = MakeTensor(DType::kFloat32, {2, 2, 8});
  by_id.set_weight_id(F32WeightId());
  by_id.set_eps(1e-5f);
  Write(requests, "weight_id", by_id.SerializeAsString());
  normd::v1::NormalizeRequest wrong;
  *wrong.mutable_input() = MakeTensor(DType::kBFloat16, {4});
  *wrong.mutable_weight() = MakeTensor(DType::kFloat16, {4});
  Write(requests, "weight_dtype_mismatch", wrong.SerializeAsString());

  // The packer reads its choices from the bytes: a few short and long ones.
  const std::filesystem::path packer = root / "fuzz_staging_packer";
  Write(packer, "zeros", std::string(64, '\0'));
  std::string ramp;
  for (int i = 0; i < 512; ++i) ramp.push_back(static_cast<char>(i * 37));
  Write(packer, "ramp", ramp);

  // Conversions: floats around the rounding boundaries of fp16 and bf16, subnormals, Inf, NaN.
  const std::filesystem::path conversions = root / "fuzz_dtype_conversions";
  const uint32_t patterns[] = {0x3F808000, 0x3F818000, 0x477FF000, 0x477FEFFF,
                               0x33000000, 0x387FC000, 0x7F800000, 0xFF800000,
                               0x7FC00001, 0x00000001, 0x80000000, 0x7F7FFFFF};
  std::string floats(sizeof patterns, '\0');
  std::memcpy(floats.data(), patterns, sizeof patterns);
  Write(conversions, "boundaries", floats);
  std::cout << "wrote the seed corpus under " << root << "\n";
  return 0;
}
