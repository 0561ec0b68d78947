// restart_policy: what the supervisor does when one of an id's actors dies (actors.md §3). Pure:
// it takes the child's kind, the id's failure history for that kind and `now`, and answers
// restart after a delay or escalate. The delay of the n-th consecutive failure is
// min(rebuild_backoff × 2^(n−1), max_rebuild_backoff) (shift saturating, protocol.md §11.3); the
// count restarts after 60 s without a failure; the max_rebuild_attempts-th consecutive failure
// escalates (the id is released, published `unavailable`, and nothing is restarted).
#pragma once

#include <chrono>
#include <cstdint>

#include <dix/options.hpp>

#include "core/runner_types.hpp"  // child_kind

namespace dix {

struct restart_history {
  std::uint32_t consecutive = 0;  // failures in a row (none more than 60 s after the previous)
  std::chrono::steady_clock::time_point last{};
};

struct restart_decision {
  bool escalate = false;
  std::chrono::milliseconds delay{0};  // when !escalate
};

// Records the failure in `history` and decides.
restart_decision decide_restart(child_kind kind, restart_history& history, std::chrono::steady_clock::time_point now,
                                const runner_options& options);

// The backoff of protocol.md §10.5/§11.3: min(base × 2^(n−1), cap), the shift saturating.
std::chrono::milliseconds backoff_delay(std::uint32_t n, std::chrono::milliseconds base, std::chrono::milliseconds cap);

inline constexpr std::chrono::seconds restart_history_reset{60};

}  // namespace dix
