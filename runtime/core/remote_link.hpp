// remote_link: the owner side of one remote backend's connection (issue 28; backends.md §4,
// decision 0042) as a pure machine — the first part of remote backends, which the remote_backend
// shell (not built yet) will drive over CAF's middleman. It decides; it never sends, sleeps,
// reads a clock or does I/O: every event takes `now`, and the shell carries out what it answers.
//
// PHASES
//
//   disconnected ──connect_due──► connecting ──connected(host)──► connected
//        ▲  ▲                         │                              │
//        │  └──connect_failed (backoff: 100 ms doubling to 10 s, jittered, for ever)
//        └──────────────── lost (a down message, a heartbeat timeout, an ack past its deadline)
//
// THE WINDOW. A delivery is sent, one-way and numbered (`seq` from 1, never reused by this link),
// while at most 16 batches and 64 MiB are unacknowledged — an empty window takes any one batch —
// else it is `deferred`; the host acknowledges cumulatively (`acked(through)`), and `changed` is
// due once a deferral was answered and the window is back to half. CAF 0.17 has no flow control:
// this window is the only bound on what the owner buffers for the host.
//
// LOSS AND REPLAY. While not connected every delivery is deferred. A loss forgets the window (CAF
// delivers nothing of it any more, or the host drops it with the session), completes nothing
// itself (the shell completes pending flushes with success: durability is judged by the cursor),
// and remembers whether any batch was sent after the last durable one. The next connection then
// owes the runtime `accepted_work_lost` for the current epoch, before `changed`: the runtime
// replays from the durable cursor, so nothing is lost and nothing is applied twice (the host
// fences by epoch and applies in sequence order). Connectivity alone never fails the backend
// (protocol.md §10.5): it shows as deferral and lag.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>

namespace dix {

struct remote_link_limits {
  std::uint32_t max_batches = 16;             // unacknowledged batches
  std::uint64_t max_bytes = 64ull << 20;      // unacknowledged bytes
  std::chrono::milliseconds ack_deadline{5000};  // the oldest unacknowledged batch: then a loss
  std::chrono::milliseconds first_backoff{100};
  std::chrono::milliseconds max_backoff{10000};
};

class remote_link {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  enum class phase : std::uint8_t { disconnected, connecting, connected };

  explicit remote_link(remote_link_limits limits = {}) : limits_(limits) {}

  phase current() const noexcept { return phase_; }

  // -- connecting --------------------------------------------------------------------------------
  // When the next connect attempt is due (disconnected only): at once for the first, then after
  // the backoff the failures so far earned.
  std::optional<time_point> connect_due() const noexcept;
  // The shell starts an attempt (with a deadline of its own: CAF's blocking connect must never run
  // on a scheduler thread).
  void connecting(time_point now);
  // The attempt failed. `jitter` in [0, 1]: the delay is backoff × (1 − jitter / 2), so attempts
  // of many owners spread out; the backoff doubles up to max_backoff.
  void connect_failed(time_point now, double jitter);
  // The host answered hello; `host_instance` names its process (kept for status: a new value is
  // a restarted host). What the runtime is owed now:
  struct on_connect {
    bool work_lost = false;  // emit accepted_work_lost(current epoch), then changed
    bool changed = false;    // emit changed (a deferral is answered)
  };
  on_connect connected(time_point now, std::uint64_t host_instance);
  // The connection is gone (down message, heartbeat timeout, an ack past its deadline).
  void lost(time_point now);
  // A new session on the same connection for a new owner epoch: the window is forgotten (the host
  // fences the older epoch's work), nothing is judged in doubt (the new epoch starts from the
  // durable cursor it reads), and the link is connecting again until the welcome.
  void new_session(time_point now);
  // The host refused the session (a superseded epoch, another backend, a broken rule): a loss
  // that also counts as a failed attempt, so the next one backs off instead of looping.
  void refused(time_point now, double jitter);

  // -- the window --------------------------------------------------------------------------------
  // A delivery of `bytes`: its sequence number when it may be sent now, nullopt when deferred.
  std::optional<std::uint64_t> deliver(std::uint64_t bytes, time_point now);
  // A delivery the shell defers itself (its session is not of the batch's epoch yet): nothing is
  // sent or numbered, and `changed` is owed as for any deferral.
  void note_deferred() noexcept { deferred_ = true; }
  // The host acknowledged every batch through `seq` (cumulative; an old or duplicate ack changes
  // nothing; one beyond what was sent is the peer's error: false, and the shell treats it as a
  // loss). `changed` is due when this returns true through `changed_due()`.
  bool acked(std::uint64_t seq, time_point now);
  // A `changed` owed to the runtime (a deferral was answered since and the window is back to at
  // most half): true once, then false until the next deferral.
  bool take_changed() noexcept;
  // Whether the oldest unacknowledged batch is older than ack_deadline at `now` (then: lost()).
  bool ack_overdue(time_point now) const noexcept;

  // -- durability ---------------------------------------------------------------------------------
  // The host made every batch through `seq` durable (a durable push or a durable answer naming
  // the last batch its cursor covers; 0: none of this link's).
  void durable_through(std::uint64_t seq) noexcept;
  // Whether work was sent that no durable cursor covers yet.
  bool work_in_doubt() const noexcept { return last_sent_ > durable_through_; }

  std::uint32_t unacked_batches() const noexcept { return static_cast<std::uint32_t>(window_.size()); }
  std::uint64_t unacked_bytes() const noexcept { return window_bytes_; }
  std::uint32_t failures() const noexcept { return failures_; }
  std::optional<std::uint64_t> host_instance() const noexcept { return host_instance_; }

 private:
  struct in_flight {
    std::uint64_t seq = 0;
    std::uint64_t bytes = 0;
    time_point sent_at{};
  };
  bool at_most_half() const noexcept;

  remote_link_limits limits_;
  phase phase_ = phase::disconnected;
  std::uint32_t failures_ = 0;
  std::optional<time_point> retry_at_;        // disconnected: the next attempt (none: at once)
  std::optional<std::uint64_t> host_instance_;
  std::deque<in_flight> window_;
  std::uint64_t window_bytes_ = 0;
  std::uint64_t next_seq_ = 1;
  std::uint64_t last_sent_ = 0;
  std::uint64_t durable_through_ = 0;
  bool lost_in_doubt_ = false;  // a loss found work in doubt: accepted_work_lost is owed
  bool deferred_ = false;       // a deferral not yet answered by changed
};

}  // namespace dix
