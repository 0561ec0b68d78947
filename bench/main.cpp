// `dix-bench <name> …`, run by `dix bench <name> …`: dispatches to one benchmark.
#include <iostream>
#include <string>
#include <vector>

#include "bench.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << "dix bench: name a benchmark: wal, catchup, failover\n";
    return 2;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "wal") return dix::bench::run_wal(rest);
  if (args[0] == "catchup") return dix::bench::run_catchup(rest);
  if (args[0] == "failover") return dix::bench::run_failover(rest);
  std::cerr << "dix bench: unknown benchmark \"" << args[0] << "\" (known: wal, catchup, failover)\n";
  return 2;
}
