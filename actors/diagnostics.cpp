#include "actors/diagnostics.hpp"

#include <iostream>
#include <thread>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/logger.hpp>
#include <caf/settings.hpp>

namespace dix {
namespace {

constexpr caf::atom_value component = caf::atom("dix");

// Whether CAF's logger writes anything: it starts its thread only with a verbosity above quiet
// and a file or a console to write to (caf::logger::start). Without the thread nothing drains its
// queue, which blocks the 129th event: it is then off for dix.
bool logger_on(caf::actor_system& sys) {
  auto& lg = sys.logger();
  if (lg.verbosity() == CAF_LOG_LEVEL_QUIET) return false;
  if (lg.console_verbosity() != CAF_LOG_LEVEL_QUIET) return true;
  return !caf::get_or(sys.config(), "logger.file-name", std::string{"-"}).empty();
}

}  // namespace

void report(caf::actor_system& sys, diagnostic_level level, std::string message, caf::actor_id actor,
            const char* function, const char* file, unsigned line) {
  const auto lvl = static_cast<unsigned>(level);
  if (logger_on(sys)) {
    auto& lg = sys.logger();
    if (!lg.accepts(lvl, component)) return;  // below its verbosity, or dix is blacklisted
    lg.log(caf::logger::event{lvl, line, component, function, function, caf::logger::skip_path(file),
                              std::move(message), std::this_thread::get_id(), actor, caf::make_timestamp()});
    return;
  }
  if (level == diagnostic_level::error || level == diagnostic_level::warning) {
    std::cerr << ("dix: " + message + "\n") << std::flush;
  }
}

}  // namespace dix
