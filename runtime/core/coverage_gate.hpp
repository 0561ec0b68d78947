// coverage_gate: what an owner publishes about its lag (protocol.md §12 coverage, §13 the writer
// gate), a machine of runner_core: the coverage tracker (core/coverage.hpp), the gate
// (core/lag_gate.hpp, its own diagram), the backlog forecast the gate reads (decision 0027), the
// figures of §13.1, the coverage refresh (§12.3) and the barriers asked for on their behalf.
//
// BARRIER ASKS — a flush asked for by coverage (§12.4: a demand waits only for a barrier) or by
// an exceeded gate (§13.3 rule 2: it holds until a durable advance), at most one of each until
// the next durable advance (or a discard of progress):
//
//   none ──coverage asks──► coverage ──gate asks──► both
//     └───gate asks──────► gate ──coverage asks───────┘
//   every ask ──durable advance, discard──► none
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/backlog_forecast.hpp"
#include "core/coverage.hpp"
#include "core/lag_gate.hpp"

namespace dix {

class coverage_gate {
 public:
  enum class barrier : std::uint8_t { none, coverage, gate, both };

  coverage_gate(const gate_policy& policy, std::chrono::milliseconds max_flush_age) : gate(policy), tracker(max_flush_age) {}

  static bool legal(barrier from, barrier to) noexcept;
  // Aborts on an illegal step, in every build.
  void to(barrier next) noexcept;
  barrier asks() const noexcept { return asks_; }
  // Whether the coverage (or the gate) asked for a barrier since the last durable advance.
  bool coverage_asked() const noexcept { return asks_ == barrier::coverage || asks_ == barrier::both; }
  bool gate_asked() const noexcept { return asks_ == barrier::gate || asks_ == barrier::both; }
  void coverage_asks() noexcept { to(asks_ == barrier::gate ? barrier::both : barrier::coverage); }
  void gate_asks() noexcept { to(asks_ == barrier::coverage ? barrier::both : barrier::gate); }
  void barrier_passed() noexcept { to(barrier::none); }

  lag_gate gate;
  coverage_tracker tracker;
  backlog_forecast backlog;  // the unread backlog's reading time, for the gate (decision 0027)
  std::map<std::string, index_time_t> read_time;  // per log: newest anchor header time read (§13.1)
  std::optional<std::chrono::steady_clock::time_point> unread_since;  // a commit arrived while caught up, not yet read
  std::uint64_t lag_tick_id = 0;  // the lag tick chain of the current ownership (0: none)
  // The refresh (§12.3): the generation its timer is armed for, whether the next turn is one,
  // and when the last turn started.
  std::optional<std::uint64_t> refresh_armed_gen;
  bool refresh_due = false;
  std::optional<std::chrono::steady_clock::time_point> last_turn_at;

 private:
  barrier asks_ = barrier::none;
};

}  // namespace dix
