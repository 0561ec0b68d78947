// backlog_forecast: how long the unread part of the logs will take this owner to read, at the
// rate it has been reading them (decision 0027). The writer gate adds it to the lag (protocol.md
// §13.1) so that it throttles a writer that outruns the index while the backlog is still small,
// instead of after the backlog already carries the lag past the budget: the lag is an age, and an
// age only shows a backlog once it has aged.
//
// Fed by the runner core after each drain turn with the sum over its logs of the read position
// and of the unread sequences (latest − read); time is an input (the runner's steady clock), so
// the class is tested with plain calls. Not thread-safe (the runner core's own).
//
// The busy rate (decision 0065). The rate over a second is the reader's pace, not its capacity:
// a reader that keeps up reads as fast as the writer writes, and one that starts a burst after a
// quiet spell has no rate for its first 100 ms, in which an unthrottled writer puts a second of a
// slow index's work in the log. So the forecast also measures the reader while it is never short
// of work: from the first of a run of readings that each found at least busy_entries entries
// unread beyond the chunk it read, over at least busy_min_span. (Not counting the chunk: a reader
// that keeps up with a fast writer reads a full chunk at each turn but leaves next to nothing
// unread; one that a stall held back starts a run after the stall, so its rate is not diluted.)
// The runner reads a chunk only once the previous one was delivered, so at a reading the chunk
// just read (its read position minus the previous reading's) is still to come and what the index
// took is the previous reading's position: over a busy run that counts exactly the chunks
// delivered in it, whatever their sizes.
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
  // A busy run counts from this many entries unread at each reading, over this span at least (a
  // slow index's chunk or two), and over the last window or so.
  static constexpr std::uint64_t busy_entries = 64;
  static constexpr std::chrono::milliseconds busy_min_span{20};

  // A reading after a drain turn. `read` is the sum of the logs' read positions (it only grows
  // within one ownership; a smaller value starts the history again, as does a reading more than
  // a window after the previous one), `unread` the sequences the logs hold beyond them.
  void observe(steady_time now, std::uint64_t read, std::uint64_t unread);
  // A new ownership, or the logs were installed again: the history says nothing about the next.
  void reset() noexcept;

  // The sequences read per second over the window; nullopt while the readings span less than
  // min_span.
  std::optional<std::uint64_t> rate() const;
  // The sequences delivered per second over the current busy run; nullopt outside one or while it
  // spans less than busy_min_span.
  std::optional<std::uint64_t> busy_rate() const;
  // unread ÷ busy_rate in ms, at most `cap_ms`; 0 outside a busy run (the gate's busy entry).
  std::uint64_t busy_drain_ms(std::uint64_t cap_ms) const;
  // unread ÷ rate in ms, at most `cap_ms`: 0 when nothing is unread or no rate is known yet (no
  // evidence of a backlog the reader cannot keep up with), `cap_ms` when the reader read nothing
  // over the window while sequences wait. (The pace steers by it: the busy rate, of a short
  // span, is for the gate's busy entry only.)
  std::uint64_t drain_ms(std::uint64_t cap_ms) const;
  // The newest reading observed; none since the last reset.
  const std::optional<log_reading>& last() const noexcept { return last_; }

 private:
  std::deque<std::pair<steady_time, std::uint64_t>> readings_;  // (moment, read), oldest first
  std::optional<log_reading> last_;
  // The busy run: the chunk in hand at the newest reading; where the run's rate is counted from
  // (moment, delivered) and the mark that becomes it half a window on (the run's rate covers the
  // last half window to window).
  std::uint64_t in_hand_ = 0;
  std::optional<std::pair<steady_time, std::uint64_t>> busy_from_, busy_mark_;
};

}  // namespace dix
