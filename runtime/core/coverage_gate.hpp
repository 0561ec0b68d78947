// coverage_gate: what an owner publishes about its lag (protocol.md §12 coverage, §13 the writer
// gate), a machine of runner_core: the coverage tracker (core/coverage.hpp), the gate
// (core/lag_gate.hpp, its own diagram), the backlog forecast the gate reads (decision 0027), the
// figures of §13.1, the coverage refresh (§12.3) and the barriers asked for on their behalf.
//
// BARRIER ASKS — a flush asked for by coverage (§12.4: a demand waits only for a barrier), by an
// exceeded gate (§13.3 rule 2: it holds until a durable advance) or by an owed coverage hook
// (decision 0051: the capture that certifies a durable write waits only for cursor-only
// progress), at most once per reason until the next durable advance (or a discard of progress).
// The state is the set of reasons asked:
//
//   {} ──a reason asks──► {reason} ──another asks──► {both} ──the third──► {all three}
//   any set ──durable advance, discard──► {}
//   a reason asking twice before the advance: illegal
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/backlog_forecast.hpp"
#include "core/coverage.hpp"
#include "core/lag_gate.hpp"
#include "core/unread_clock.hpp"

namespace dix {

class coverage_gate {
 public:
  // The reasons, as bits of the state.
  enum class reason : std::uint8_t { coverage = 1, gate = 2, hook = 4 };
  using barrier = std::uint8_t;  // a set of reasons; 0: none asked
  static constexpr barrier none = 0;

  coverage_gate(const gate_policy& policy, std::chrono::milliseconds max_flush_age) : gate(policy), tracker(max_flush_age) {}

  static bool legal(barrier from, barrier to) noexcept;
  // Aborts on an illegal step, in every build.
  void to(barrier next) noexcept;
  barrier asks() const noexcept { return asks_; }
  bool asked(reason r) const noexcept { return (asks_ & static_cast<barrier>(r)) != 0; }
  void ask(reason r) noexcept { to(static_cast<barrier>(asks_ | static_cast<barrier>(r))); }
  bool coverage_asked() const noexcept { return asked(reason::coverage); }
  bool gate_asked() const noexcept { return asked(reason::gate); }
  bool hook_asked() const noexcept { return asked(reason::hook); }
  void coverage_asks() noexcept { ask(reason::coverage); }
  void gate_asks() noexcept { ask(reason::gate); }
  void hook_asks() noexcept { ask(reason::hook); }
  void barrier_passed() noexcept { to(none); }

  lag_gate gate;
  coverage_tracker tracker;
  backlog_forecast backlog;  // the unread backlog's reading time, for the gate (decision 0027)
  std::map<std::string, index_time_t> read_time;  // per log: newest anchor header time read (§13.1)
  unread_clock unread;  // since when committed work waits unread (§13.1, decision 0065)
  std::uint64_t lag_tick_id = 0;  // the lag tick chain of the current ownership (0: none)
  // The refresh (§12.3): the generation its timer is armed for, whether the next turn is one,
  // and when the last turn started.
  std::optional<std::uint64_t> refresh_armed_gen;
  bool refresh_due = false;
  std::optional<std::chrono::steady_clock::time_point> last_turn_at;
  // A rebuild's boundary became durable before the logs' opening at it answered (decision 0062):
  // the hook is owed the anchor ends that opening reports (decision 0051). Kept across a discard
  // of progress, as the tracker's own debt is; owed at the next successful log_opened.
  bool hook_owed_at_open = false;

 private:
  barrier asks_ = none;
};

}  // namespace dix
