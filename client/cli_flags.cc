#include "client/cli_flags.h"

#include <algorithm>

#include "absl/flags/parse.h"

namespace normd {

std::vector<std::string> ParseCommandLineWithDashes(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string& a = args[i];
    if (a == "--") break;
    if (a.rfind("--", 0) != 0) continue;
    const size_t end = std::min(a.find('='), a.size());
    std::replace(a.begin() + 2, a.begin() + static_cast<std::ptrdiff_t>(end), '-', '_');
  }
  std::vector<char*> ptrs;
  for (auto& a : args) ptrs.push_back(a.data());
  const std::vector<char*> rest = absl::ParseCommandLine(static_cast<int>(ptrs.size()), ptrs.data());
  return std::vector<std::string>(rest.begin(), rest.end());
}

}  // namespace normd
