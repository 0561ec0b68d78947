// backlog_forecast: how long the unread part of the logs will take this owner to read, at the
// rate it has been reading them (decision 0027). The writer gate adds it to the lag (protocol.md
// §13.1) so that it throttles a writer that outruns the index while the backlog is still small,
// instead of after the backlog already carries the lag past the budget: the lag is an age, and an
// age only shows a backlog once it has aged.
//
// Fed by the runner core after each drain turn with the sum over its logs of the read position
// and of the unread sequences (latest − read); time is an input (the runner's steady clock), so
// the class is tested with plain calls. Not thread-safe (the runner core's own).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

namespace dix {

// The owner's logs as one reading (decision 0060): when it was taken, the sum over the logs of
// the read positions and of the sequences beyond them.
struct log_reading {
  std::chrono::steady_clock::time_point at{};
  std::uint64_t read = 0, unread = 0;
  std::uint64_t latest() const noexcept { return read + unread; }
};

class backlog_forecast {
 public:
  using steady_time = std::chrono::steady_clock::time_point;
  // The rate is read over about this much of the recent past, and known only once the readings
  // span at least min_span.
  static constexpr std::chrono::milliseconds window{1000};
  static constexpr std::chrono::milliseconds min_span{100};

  // A reading after a drain turn. `read` is the sum of the logs' read positions (it only grows
  // within one ownership; a smaller value starts the history again, as does a reading more than
  // a window after the previous one), `unread` the sequences the logs hold beyond them.
  void observe(steady_time now, std::uint64_t read, std::uint64_t unread);
  // A new ownership, or the logs were installed again: the history says nothing about the next.
  void reset() noexcept;

  // The sequences read per second over the window; nullopt while the readings span less than
  // min_span.
  std::optional<std::uint64_t> rate() const;
  // unread ÷ rate in ms, at most `cap_ms`: 0 when nothing is unread or no rate is known yet (no
  // evidence of a backlog the reader cannot keep up with), `cap_ms` when the reader read nothing
  // over the window while sequences wait.
  std::uint64_t drain_ms(std::uint64_t cap_ms) const;
  // The newest reading observed; none since the last reset.
  const std::optional<log_reading>& last() const noexcept { return last_; }

 private:
  std::deque<std::pair<steady_time, std::uint64_t>> readings_;  // (moment, read), oldest first
  std::optional<log_reading> last_;
};

}  // namespace dix
