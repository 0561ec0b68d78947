#include <dix/readiness.hpp>
#include <dix/status.hpp>

#include <array>

namespace dix {

std::string_view to_string(readiness_state s) noexcept {
  static constexpr std::array<std::string_view, 5> names{"unknown", "ready", "rebuilding", "needs-rebuild",
                                                         "unavailable"};
  auto i = static_cast<std::size_t>(s);
  return i < names.size() ? names[i] : names[0];
}

std::string_view to_string(readiness_reason r) noexcept {
  static constexpr std::array<std::string_view, 16> names{
      "none",          "cursor-missing",  "cursor-unoffered", "log-missing",      "log-retention",
      "log-corrupt",   "reload",          "backend-failed",   "runner-failed",    "condemned",
      "shutdown-failed", "rebuild-failed", "rebuild-exhausted", "rebuild-requested", "registration-changed",
      "verify-failed"};
  static_assert(names.size() == static_cast<std::size_t>(last_readiness_reason) + 1);
  auto i = static_cast<std::size_t>(r);
  return i < names.size() ? names[i] : names[0];
}

std::string_view to_string(backend_hold h) noexcept {
  switch (h) {
    case backend_hold::low_disk_space: return "low-disk-space";
    case backend_hold::remote_unreachable: return "remote-host-unreachable";
    case backend_hold::none: break;
  }
  return "none";
}

std::string_view to_string(runner_state s) noexcept {
  static constexpr std::array<std::string_view, 11> names{
      "dormant",         "waiting-lock",  "running",     "idle",      "deferred", "waiting-durable",
      "rebuilding",      "needs-rebuild", "unavailable", "releasing", "stopped"};
  auto i = static_cast<std::size_t>(s);
  return i < names.size() ? names[i] : "unknown";
}

}  // namespace dix
