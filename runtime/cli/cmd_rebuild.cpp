// `dix rebuild --db PATH ID`: asks the owner of backend ID for a rebuild through the database's
// shared readiness segment (request_rebuild, api.md §7), from a process that has no runtime. It
// maps the segment read-write, sets the slot's rebuild_request and wakes the watchers; it never
// opens the store. Until rebuild exists, the owner condemns the index with `rebuild-requested`
// and it parks in `needs-rebuild` (`dix status` shows it).
#include <iostream>

#include <dix/free_functions.hpp>

#include "commands.hpp"
#include "usage.hpp"
#include "tool/args.hpp"

namespace dix::cli {

int run_rebuild(const std::vector<std::string>& argv) {
  int status = exit_usage;
  auto a = tool::args::parse_command(argv, {{"db"}, {}, 1, 1, "backend id"}, "dix rebuild", command_usage("rebuild"),
                                     status);
  if (!a) return status;
  if (!a->has("db")) {
    std::cerr << "dix rebuild: --db PATH is required\n";
    return exit_usage;
  }
  const auto& id = a->positional().front();
  auto stored = request_rebuild(a->get("db"), id);
  if (!stored) {
    std::cerr << "dix rebuild: " << stored.error().to_string() << "\n";
    return stored.error().value() == errc::invalid_argument ? exit_usage : exit_error;
  }
  std::cout << "rebuild requested for " << id << "\n";
  return exit_ok;
}

}  // namespace dix::cli
