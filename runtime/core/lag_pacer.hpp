// When the owner publishes its lag figures for other processes (the metrics segment's lag part,
// docs/formats-metrics.md §2; decision 0021): whenever what they say changed, but at most every
// min_interval on the actor clock (a new epoch, and a rebuild's start or end, at once), and once
// more when they stopped changing (a publication held back by the interval is due at the
// interval's end: the caller arms a timer for `due_in` and calls next() again then). The ages (stalled, unread, oldest accepted) are published with the
// moment they were taken and whether they grow, so a reader ages them itself and an owner parked
// for minutes writes nothing. Also the per-log read rate for the ETA: sequences read over the
// last rate_window (at least the time since the previous publication), from the read positions
// of the publications in it — reads come in turns, and a 250 ms window sampled them unevenly:
// half the real rate in every other sample flipped a steady index between following and
// catching up (issue 34). Pure: the runner actor feeds it each event's
// snapshot, the actor clock's time and the wall clock.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include <dix/activity.hpp>

#include "core/runner_core.hpp"

namespace dix {

class lag_pacer {
 public:
  static constexpr std::chrono::milliseconds min_interval{250};
  static constexpr std::chrono::milliseconds rate_window{2000};

  struct decision {
    std::optional<lag_figures> publish;             // write these now
    std::optional<std::chrono::milliseconds> due_in;  // held back: call next() again after this
  };

  // Nothing while `s` is not the owner's. `options` are the runner's (the figures carry its cap
  // and max_flush_age), `wall_ns` CLOCK_REALTIME now (stamped on the figures). lag_gate is left 0: the publisher,
  // which stores the slot's gate, fills it in (and refreshes it when the gate changes).
  decision next(const runner_snapshot& s, const runner_options& options, steady_time now, std::uint64_t wall_ns);

 private:
  // What the figures say, without the ages' growth: a change of any of it is worth telling.
  struct shape {
    epoch_t epoch = 0;
    runner_state state = runner_state::dormant;
    std::uint64_t cursor_lag_ms = 0;
    std::optional<steady_time> oldest_accepted_at, stalled_since, unread_since;
    std::uint64_t accepted_batches = 0;
    std::uint32_t transient_faults = 0;
    readiness_reason last_fault = readiness_reason::none;
    std::vector<std::uint64_t> sequence_lags;
    // The verify's figures (issue 31): a start, an end, a proof or a failure is worth telling.
    bool verifying = false;
    std::optional<steady_time> verified_at;
    std::uint64_t verify_failures = 0;
    std::uint64_t verify_read = 0;  // the scan's progress: told at most every min_interval
    bool operator==(const shape& o) const;
  };
  struct told {
    shape what;
    steady_time at;
    std::vector<std::uint64_t> read_sequences;  // per log, when told
  };
  std::optional<told> last_;
  // The read positions of this epoch's publications within rate_window (oldest first; the
  // newest is last_'s): where the rate is measured from.
  struct position {
    steady_time at;
    std::vector<std::uint64_t> read_sequences;
  };
  std::deque<position> history_;
};

}  // namespace dix
