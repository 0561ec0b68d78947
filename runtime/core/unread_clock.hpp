// unread_clock: since when committed work waits unread — protocol.md §13.1's unread age, which
// the lag (and so the writer gate) counts, kept as decision 0065 amends it.
//
// §13.1 stamps `unread_since` when a commit arrives while the reader is caught up (or a chunk
// shows the log beyond what was read) and clears it only at the end of the log. A reader that
// keeps up with a writer near its capacity is seldom exactly at the end: a few ms behind for
// seconds, its unread age grew by a second a second, the gate took it for a lag past 5B/8 and
// cut the writer to half until the reader reached the end (phase (c) of dix bench sustained:
// dips to 2 000–4 000 commits/s every few seconds, docs/benchmarks.md).
//
// So the clock also keeps marks: at each turn that leaves something unread, the moment the turn
// began and each log's latest sequence as the turn saw it at its end. Everything committed before
// that moment is at or below those sequences. Once a later turn has read every log up to a mark,
// what is still unread was committed after the mark's moment, and the stamp moves up to it. A
// reader that never reads up to any mark — one that falls behind — keeps its stamp and its age
// grows as before: neither it nor a backend that never barriers can hide (§13.1). The stamp only
// moves forward, to a moment no later than the oldest unread commit.
//
// Bounded: marks at least mark_spacing apart (a closer one replaces the newest, a later moment
// and sequences at least as high: the clock then moves less, never more) and at most max_marks
// (a mark beyond is not kept: the same). A turn's position is what it cut into its chunk, not what
// it collected for later turns. When the logs are opened again, the stamp goes back to §13.1's
// own. Pure; the runner core's own.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace dix {

class unread_clock {
 public:
  using steady_time = std::chrono::steady_clock::time_point;
  static constexpr std::chrono::milliseconds mark_spacing{2};
  static constexpr std::size_t max_marks = 1024;

  // One log as a turn left it: the end of the last transaction read and the store's latest
  // sequence when the turn ended.
  struct log_seen {
    std::uint64_t read = 0, latest = 0;
  };

  // A commit arrived while every log was caught up: stamped now unless already stamped.
  void commit_seen(steady_time now);
  // A turn's chunk. `began`: when the turn was asked for (none: no mark is made); `logs` in
  // attach order; `end_of_log`: every log was read to its end (clears the clock).
  void read(std::optional<steady_time> began, const std::vector<log_seen>& logs, bool end_of_log, steady_time now);
  // The logs were opened again (a retry, a rebuild's boundary): what was read past a mark may be
  // read again, so the stamp goes back to §13.1's own and the marks go.
  void reopened() noexcept;
  // A new ownership: nothing is stamped.
  void reset() noexcept;

  // Since when work waits unread; none: nothing does (as far as the reader knows).
  const std::optional<steady_time>& since() const noexcept { return since_; }
  std::size_t marks() const noexcept { return marks_.size(); }

 private:
  struct mark {
    steady_time at;
    std::vector<std::uint64_t> latest;  // per log, attach order
  };
  std::optional<steady_time> since_, stamped_;  // the stamp as moved up; §13.1's own
  std::deque<mark> marks_;
};

}  // namespace dix
