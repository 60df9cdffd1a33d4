// Calls a running normd through the installed client library: the seed example, float32 [3, 4]
// with weight [1, 2] and eps 0, which must come back as [0.848528, 2.262742].
// Usage: normd_consumer HOST:PORT
#include <cmath>
#include <cstdio>
#include <vector>

#include "client/normd_client.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s HOST:PORT\n", argv[0]);
    return 2;
  }
  normd::ClientOptions options;
  options.target = argv[1];
  auto client = normd::Client::Connect(options);
  if (!client.ok()) {
    std::fprintf(stderr, "connect: %s\n", client.status().ToString().c_str());
    return 1;
  }
  const std::vector<float> x = {3.0f, 4.0f};
  const std::vector<float> w = {1.0f, 2.0f};
  normd::NormalizeOptions normalize;
  normalize.eps = 0.0f;
  auto result = (*client)->Normalize(normd::TensorView::Float32(x, {1, 2}),
                                     normd::TensorView::Float32(w, {2}), normalize);
  if (!result.ok()) {
    std::fprintf(stderr, "Normalize: %s\n", result.status().ToString().c_str());
    return 1;
  }
  const std::vector<float> y = result->output.ToFloat();
  const float expected[] = {0.848528f, 2.262742f};
  for (int i = 0; i < 2; ++i) {
    if (y.size() != 2 || std::fabs(y[i] - expected[i]) > 1e-5f) {
      std::fprintf(stderr, "wrong answer: y[%d] = %f, expected %f\n", i, y.size() == 2 ? y[i] : 0,
                   expected[i]);
      return 1;
    }
  }
  std::printf("normd_consumer: [%f, %f]\n", y[0], y[1]);
  return 0;
}
