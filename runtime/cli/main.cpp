// `dix`: the command-line entry point. Subcommands live in runtime/cli/cmd_*.cpp.
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "usage.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // Bare `dix` is a mistake (usage on stderr, exit 2); asking for help is not.
  if (args.empty()) {
    std::cerr << dix::cli::dix_usage();
    return dix::cli::exit_usage;
  }
  if (args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    std::cout << dix::cli::dix_usage();
    return dix::cli::exit_ok;
  }
  auto command = args[0];
  args.erase(args.begin());
  if (command == "wal") return dix::cli::run_wal(args);
  if (command == "write") return dix::cli::run_write(args);
  if (command == "demo") return dix::cli::run_demo(args);
  if (command == "status") return dix::cli::run_status(args);
  if (command == "rebuild") return dix::cli::run_rebuild(args);
  if (command == "serve") return dix::cli::run_serve(args);
  if (command == "bench") return dix::cli::run_bench(args);
  std::cerr << "dix: unknown command \"" << command << "\" (dix --help for usage)\n";
  return dix::cli::exit_usage;
}
