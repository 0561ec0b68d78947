// `dix`: the command-line entry point. Subcommands live in runtime/cli/cmd_*.cpp.
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "usage.hpp"

namespace {

bool is_command(const std::string& name) {
  for (const char* known : {"wal", "write", "demo", "status", "rebuild", "verify", "serve", "serve-backend", "query", "bench"}) {
    if (name == known) return true;
  }
  return false;
}

// Runs `command` with `args`; nullopt when there is no such command (nothing was run).
std::optional<int> dispatch(const std::string& command, const std::vector<std::string>& args) {
  if (command == "wal") return dix::cli::run_wal(args);
  if (command == "write") return dix::cli::run_write(args);
  if (command == "demo") return dix::cli::run_demo(args);
  if (command == "status") return dix::cli::run_status(args);
  if (command == "rebuild") return dix::cli::run_rebuild(args);
  if (command == "verify") return dix::cli::run_verify(args);
  if (command == "serve") return dix::cli::run_serve(args);
  if (command == "serve-backend") return dix::cli::run_serve_backend(args);
  if (command == "query") return dix::cli::run_query(args);
  if (command == "bench") return dix::cli::run_bench(args);
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // Bare `dix` is a mistake (usage on stderr, exit 2); asking for help is not.
  if (args.empty()) {
    std::cerr << dix::cli::dix_usage();
    return dix::cli::exit_usage;
  }
  if (args[0] == "help" || args[0] == "--help" || args[0] == "-h") {
    // `dix help` alone (or asked for help itself), or `dix help COMMAND` (that command's --help);
    // a word that is no command is named as such, a word after a command refused as every
    // command refuses a stray word (issue 34).
    if (args.size() == 1 || (args.size() == 2 && (args[1] == "--help" || args[1] == "-h" || args[1] == "help"))) {
      std::cout << dix::cli::dix_usage();
      return dix::cli::exit_ok;
    }
    if (args.size() == 2) {
      if (auto status = dispatch(args[1], {"--help"})) return *status;
      std::cerr << "dix " << args[0] << ": unknown command \"" << args[1] << "\" (dix --help lists them)\n";
      return dix::cli::exit_usage;
    }
    const auto& stray = is_command(args[1]) ? args[2] : args[1];
    std::cerr << "dix " << args[0] << ": unexpected argument \"" << stray
              << "\" (dix --help for usage; dix help COMMAND for a command's)\n";
    return dix::cli::exit_usage;
  }
  auto command = args[0];
  args.erase(args.begin());
  if (auto status = dispatch(command, args)) return *status;
  std::cerr << "dix: unknown command \"" << command << "\" (dix --help for usage)\n";
  return dix::cli::exit_usage;
}
