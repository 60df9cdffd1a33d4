// Parsing a command line with absl flags spelled with dashes.
//
// absl flags are named with underscores; normd and its tools also accept dashes inside a flag's
// name (--max-hidden as --max_hidden, --residual-out as --residual_out), which is what shell users
// type. Shared by normd (server/config/server_config.cc) and the client-side tools (normctl,
// normbench, normd-echo).
#ifndef NORMD_BASE_COMMAND_LINE_H_
#define NORMD_BASE_COMMAND_LINE_H_

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/flags/parse.h"

namespace normd {

// Parses argv with absl::ParseCommandLine after turning dashes inside flag names (before any '=')
// into underscores; nothing after a lone "--" is touched. Returns the positional arguments (argv[0]
// first), as absl does. Exits, as absl does, on an unknown flag or --help.
inline std::vector<std::string> ParseCommandLineWithDashes(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string& a = args[i];
    if (a == "--") break;
    if (a.rfind("--", 0) != 0) continue;
    const size_t end = std::min(a.find('='), a.size());
    std::replace(a.begin() + 2, a.begin() + static_cast<std::ptrdiff_t>(end), '-', '_');
  }
  std::vector<char*> pointers;
  for (std::string& a : args) pointers.push_back(a.data());
  const std::vector<char*> rest =
      absl::ParseCommandLine(static_cast<int>(pointers.size()), pointers.data());
  return std::vector<std::string>(rest.begin(), rest.end());
}

}  // namespace normd

#endif  // NORMD_BASE_COMMAND_LINE_H_
