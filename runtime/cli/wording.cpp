#include "wording.hpp"

namespace dix::cli {

std::string shown_reason(const readiness& r) {
  if (r.state == readiness_state::rebuilding && r.reason == readiness_reason::cursor_missing && r.rebuild_attempts == 0) {
    return "first-build";
  }
  return std::string(to_string(r.reason));
}

}  // namespace dix::cli
