#include "core/restart_policy.hpp"

#include <algorithm>

namespace dix {

std::chrono::milliseconds backoff_delay(std::uint32_t n, std::chrono::milliseconds base, std::chrono::milliseconds cap) {
  if (n == 0) return std::chrono::milliseconds(0);
  const auto shift = std::min<std::uint32_t>(n - 1, 62);
  const auto b = base.count(), c = cap.count();
  if (b <= 0) return std::chrono::milliseconds(0);
  if (b > (c >> shift)) return cap;
  return std::chrono::milliseconds(std::min<long long>(b << shift, c));
}

restart_decision decide_restart(child_kind kind, restart_history& history, std::chrono::steady_clock::time_point now,
                                const runner_options& options) {
  (void)kind;  // one policy for every kind today; the kind decides what a restart means
  if (history.consecutive > 0 && now - history.last >= restart_history_reset) history.consecutive = 0;
  ++history.consecutive;
  history.last = now;
  restart_decision d;
  if (history.consecutive >= options.max_rebuild_attempts) {
    d.escalate = true;
    return d;
  }
  d.delay = backoff_delay(history.consecutive, options.rebuild_backoff, options.max_rebuild_backoff);
  return d;
}

}  // namespace dix
