// What the CUDA benchmark programs share: failing loudly on a CUDA error, the median of samples,
// and reading a comma-separated list of numbers from the command line.
#ifndef NORMD_BENCH_CUDA_BENCH_UTIL_H_
#define NORMD_BENCH_CUDA_BENCH_UTIL_H_

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

// A benchmark has nothing sensible to do after a CUDA error: say where, and exit.
#define CHECK_CUDA(expr)                                                                         \
  do {                                                                                           \
    const cudaError_t e_ = (expr);                                                               \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

namespace normd::bench {

// The upper median (the element at size/2 once sorted); 0 for no samples.
inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// "0,250,1000" -> {0, 250, 1000}; empty items are skipped.
inline std::vector<double> ParseNumberList(const std::string& s) {
  std::vector<double> v;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t comma = s.find(',', at);
    const std::string item =
        s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (!item.empty()) v.push_back(std::atof(item.c_str()));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return v;
}

}  // namespace normd::bench

#endif  // NORMD_BENCH_CUDA_BENCH_UTIL_H_
