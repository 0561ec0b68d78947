// `dix bench <name> …`: the end-to-end benchmarks are a program of their own, `dix-bench`
// (bench/README.md), built beside `dix`. This command replaces the process with it,
// so its output, exit status and signals are the benchmark's own.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "commands.hpp"
#include "tool/executable.hpp"

namespace dix::cli {

int run_bench(const std::vector<std::string>& argv) {
  std::string problem;
  auto bench = tool::sibling_executable("dix-bench", problem);
  if (!bench) {
    std::cerr << "dix bench: " << problem << "\n";
    return exit_error;
  }
  std::vector<std::string> args{bench->string()};
  args.insert(args.end(), argv.begin(), argv.end());
  std::vector<char*> pointers;
  for (auto& a : args) pointers.push_back(a.data());
  pointers.push_back(nullptr);
  ::execv(pointers[0], pointers.data());
  int err = errno;
  std::cerr << "dix bench: cannot run " << bench->string() << ": " << std::strerror(err)
            << (err == ENOENT ? " (build the dix_bench target)" : "") << "\n";
  return exit_error;
}

}  // namespace dix::cli
