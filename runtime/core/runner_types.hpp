// The small vocabulary a runner shares with its messages (messages/runner.hpp) and its core
// (core/runner_core.hpp): the wake bits, the runner's timers and the kinds of an id's children.
// Kept apart from runner_core.hpp so that every file that sees the messages does not compile the
// core's ~500 lines.
#pragma once

#include <cstdint>

namespace dix {

namespace wake_flag {
inline constexpr std::uint8_t commit = 1;
inline constexpr std::uint8_t system = 2;  // with commit: the commit was a system transaction
inline constexpr std::uint8_t backend = 4;
inline constexpr std::uint8_t timer = 8;
inline constexpr std::uint8_t coverage = 16;
inline constexpr std::uint8_t rebuild = 32;  // the slot's rebuild_request is set (§11.2)
inline constexpr std::uint8_t all = commit | system | backend | timer | coverage | rebuild;

// Two wakes as one (§8.2): the union of their flags, except that a non-system commit in either
// outranks a system commit in the other — `system` qualifies the commit, and an idle owner or a
// dormant runner ignores a system commit (§8.3) but not a non-system one beside it.
constexpr std::uint8_t merge(std::uint8_t a, std::uint8_t b) noexcept {
  auto plain_commit = [](std::uint8_t f) { return (f & commit) != 0 && (f & system) == 0; };
  const auto both = static_cast<std::uint8_t>(a | b);
  return plain_commit(a) || plain_commit(b) ? static_cast<std::uint8_t>(both & ~system) : both;
}
}  // namespace wake_flag

// coverage_refresh: an idle owner that ran no turn for max_flush_age runs a coverage refresh turn (§12.3).
// lag_tick: the gate's periodic lag sample while owning (protocol.md §13.3); it carries the tick
// chain's id, not the generation, so a discard of progress does not end the chain.
// verify_deadline: bounds a verify's fencing … lifting (core/verify_attempt.hpp); it carries the
// verify's number, not the generation.
enum class timer_kind : std::uint8_t {
  flush_age, cursor_flush, transient_retry, deferral_retry, rebuild_backoff, lag_tick, coverage_refresh, verify_deadline,
  verify_schedule
};

// The actors of one registered id that its supervisor restarts (actors.md §3).
enum class child_kind : std::uint8_t { tailer, proxy, runner };

}  // namespace dix
