// The CLI tests' way to run the `dix` binary under test (DIX_BINARY, dix_system_tests only): argv
// after the program name, the scratch directory for its output files.
#pragma once

#include <string>
#include <vector>

#include "adapters/test_support.hpp"

namespace dix::test {

inline command_result dix_cli(const temp_dir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), DIX_BINARY);
  return run(args, dir.path());
}

}  // namespace dix::test
