// Command-line helpers shared by normd's client-side tools (normctl, normbench, normd-echo).
//
// absl flags are spelled with underscores; our tools, like normd itself, also accept dashes
// (--residual-out as --residual_out), which is what shell users type.
#ifndef NORMD_CLIENT_CLI_FLAGS_H_
#define NORMD_CLIENT_CLI_FLAGS_H_

#include <string>
#include <vector>

namespace normd {

// Parses argv with absl::ParseCommandLine after turning dashes inside flag names into underscores.
// Returns the positional arguments (argv[0] first), as absl does.
std::vector<std::string> ParseCommandLineWithDashes(int argc, char** argv);

}  // namespace normd

#endif  // NORMD_CLIENT_CLI_FLAGS_H_
