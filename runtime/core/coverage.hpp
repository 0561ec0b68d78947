// coverage: the owner's half of protocol.md §12.1–§12.4 as pure values — the captures a runner
// holds, their association with offered entries by sequence (§12.2), the choice of what to publish
// (§12.3), the demand it serves (§12.4) and the pacing of the backend's publish_coverage hook.
// runner_core owns one coverage_tracker per runner and calls into it; the tracker never sees the
// offered list itself, only the anchor end sequences of the entry that certifies.
//
// A capture {time, positions} is taken by the tailer under each store's commit mutex: every
// transaction with header time ≤ time has a sequence ≤ its log's position. An entry whose anchor
// ends at or after every position > 0 therefore holds (at or before its anchor) every transaction
// the capture includes; when that entry is durable — or nothing non-durable before it carries a
// mutation — `time` may be certified as coverage_time.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>

#include <dix/cursor.hpp>  // positions
#include <dix/result.hpp>  // index_time_t, epoch_t

namespace dix {

struct coverage_capture {
  index_time_t time = 0;     // the minimum of the logs' capture times
  dix::positions positions;  // per log: GetLatestSequenceNumber() under its commit mutex (0: no write)
};

inline bool operator==(const coverage_capture& a, const coverage_capture& b) {
  return a.time == b.time && a.positions == b.positions;
}
inline bool operator!=(const coverage_capture& a, const coverage_capture& b) { return !(a == b); }

// §12.2: the capture is covered by an entry whose anchors end at `anchor_ends` (per log, sequence
// + op count − 1) when every log with a position > 0 ends at or after it. A log the entry does
// not name covers nothing above 0.
bool covers(const dix::positions& anchor_ends, const coverage_capture& c) noexcept;

class coverage_tracker {
 public:
  using steady_time = std::chrono::steady_clock::time_point;

  explicit coverage_tracker(std::chrono::milliseconds max_flush_age = std::chrono::milliseconds(1000));

  // §12.1: whether the drain turn starting at `now` captures — a demand above the published
  // time, or no capture asked for in the last max_flush_age/4. A coverage refresh captures in
  // any case (the caller's decision). requested() restarts the max_flush_age/4 clock and notes
  // the demand open at that moment: the capture it asks for is taken after every commit that
  // demand waits for.
  bool wants_capture(steady_time now) const noexcept;
  void requested(steady_time now) noexcept {
    last_request_ = now;
    asked_for_ = demand_open() ? demand_ : 0;
  }
  // A capture the tailer took, in the order they were asked for (their times rise); it answers
  // the last requested().
  void add(coverage_capture c);

  // §12.4: the slot's coverage_demand as the runner read it at a coverage wake (0: none); it
  // stands until a published coverage_time reaches it or the next wake reads another.
  void demand(index_time_t since) noexcept;
  bool demand_open() const noexcept { return demand_ > published_; }
  // Whether `ends` (the newest offered entry) covers a capture that serves a demand: one taken
  // at or after the current demand, or one asked for while a demand was open and taken after it
  // (its time at or above the demand of its request). Then demanded commits are accepted and only
  // a barrier is missing (flush(coverage)). The second case keeps a demand that moves on at every
  // turn — a waiter per commit under a steady writer, each raising it beyond the capture in
  // flight — from waiting for a capture that never catches up with it (decision 0026).
  bool demand_delivered(const dix::positions& ends) const noexcept;

  // §12.3: the newest held capture covered by `ends` whose time is above the published one. It
  // becomes the published coverage_time; it and every older capture are dropped. nullopt:
  // nothing new to publish (the captures stay).
  std::optional<index_time_t> publish(const dix::positions& ends);
  index_time_t published() const noexcept { return published_; }
  // A publication of any state but ready stored coverage_time = 0 (protocol.md §1.5).
  void cleared() noexcept { published_ = 0; }
  // §1.4 discard progress: the captures go (their positions may no longer be covered by what is
  // replayed); the published time and the demand stay, they are the slot's.
  void discard() noexcept { captures_.clear(); }
  std::size_t held() const noexcept { return captures_.size(); }

  // §12.3, api.md §5: the publication the backend's publish_coverage hook is due for — the last
  // published capture once `durable_ends` (the durable entry) covers it, at most once per
  // max_flush_age and never twice for one time. nullopt: nothing due.
  std::optional<coverage_capture> hook_due(const dix::positions& durable_ends, steady_time now);
  // A relevant write became durable in the entry whose anchors end at `durable_ends`: the hook
  // owes the backend a capture that reaches those ends (a reader of the backend's own, an index
  // node's, waits for it). A hook whose capture's positions reach them pays the debt.
  void owe_hook(const dix::positions& durable_ends);
  // Whether a barrier is all the owed hook waits for: the last published capture reaches the owed
  // ends, but the durable entry (`durable_ends`) does not cover it — only cursor-only progress
  // lies beyond, which alone waits for the long cursor-only timer (decision 0051).
  bool hook_waits_for_barrier(const dix::positions& durable_ends) const noexcept;

 private:
  std::chrono::milliseconds max_flush_age_;
  struct held_capture {
    coverage_capture capture;
    index_time_t asked_for = 0;  // the demand open when it was requested (0: none)
  };
  std::deque<held_capture> captures_;  // oldest first
  index_time_t asked_for_ = 0;         // of the capture requested last
  std::optional<steady_time> last_request_;
  index_time_t published_ = 0;
  index_time_t demand_ = 0;
  std::optional<coverage_capture> last_published_;
  index_time_t hooked_time_ = 0;
  dix::positions owed_;  // the ends a hook must reach (owe_hook); empty: nothing owed
  std::optional<steady_time> hooked_at_;
};

}  // namespace dix
