// dix's diagnostics (decision 0045): the one way library code reports what it cannot answer to
// anyone — a helper actor that ended, a publication that failed — as component "dix" of CAF's
// logger. Debian's libcaf is built with CAF_LOG_LEVEL quiet, which compiles CAF's CAF_LOG_*
// macros out (for CAF and for us: the level is CAF's build's), but its logger object still
// runs when the application configures a verbosity (logger.verbosity, logger.file-verbosity,
// logger.console-verbosity), so dix hands it events itself.
#pragma once

#include <string>

#include <caf/fwd.hpp>

namespace dix {

// CAF's levels (caf/detail/log_level.hpp: CAF_LOG_LEVEL_ERROR … _DEBUG).
enum class diagnostic_level : unsigned { error = 3, warning = 6, info = 9, debug = 12 };

// Reports `message` from component "dix", by `actor` (0: none) of `sys`:
// * when CAF's logger is on (a verbosity above quiet, and a file or the console to write to), it
//   decides: an event of category "dix" at `level`, kept or dropped by its verbosity and its
//   component blacklist (logger.component-blacklist = ["dix"] silences dix), written by its
//   thread (or at once with logger.inline-output) to its file and console in their formats;
// * when it is off (CAF's default here), errors and warnings go to std::cerr as one line
//   "dix: <message>", as before there was a logger; info and debug go nowhere.
// Thread-safe; never blocks but for std::cerr (CAF's queue has room: the logger thread drains it).
void report(caf::actor_system& sys, diagnostic_level level, std::string message, caf::actor_id actor = 0,
            const char* function = __builtin_FUNCTION(), const char* file = __builtin_FILE(),
            unsigned line = __builtin_LINE());

}  // namespace dix
