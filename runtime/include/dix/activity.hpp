// What an index is doing, in words any process can read (issue 11 "Stall attribution", decision
// 0021): the owner's lag figures as it publishes them in the metrics segment
// (docs/formats-metrics.md §2, the lag part), and a pure attribution of them plus the slot's
// readiness to *idle* (caught up), *following* (behind only by the flush rhythm), *catching up*
// (a rate and an ETA to the end of the log) or *stalled*, naming what holds it. Plain values; std only; no clock is read here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dix/options.hpp>
#include <dix/readiness.hpp>
#include <dix/status.hpp>

namespace dix {

// Per log, as far as the block has room (the first lag_log_slots logs in attach order).
struct log_lag_figures {
  std::uint64_t sequence_lag = 0;       // latest − durable sequence (protocol.md §14.2)
  std::uint64_t read_per_s = 0;         // sequences read per second, over the last publications
  std::int64_t retention_headroom_ms = -1;  // protocol.md §13.2; −1: not sampled, live file or no TTL
  // The log's name (1…64 bytes of the name rules, decision 0030); empty only in figures read
  // from a metrics segment of layout 1, whose writer stored no names.
  std::string log = {};
  // The log's sequence the last successful verify proved the index equal at (issue 31); 0: none.
  std::uint64_t verified_sequence = 0;
};

inline bool operator==(const log_lag_figures& a, const log_lag_figures& b) {
  return a.sequence_lag == b.sequence_lag && a.read_per_s == b.read_per_s
         && a.retention_headroom_ms == b.retention_headroom_ms && a.log == b.log
         && a.verified_sequence == b.verified_sequence;
}
inline bool operator!=(const log_lag_figures& a, const log_lag_figures& b) { return !(a == b); }

inline constexpr std::size_t lag_log_slots = 2;

// The lag figures of protocol.md §13.1 as the owner took them at `taken_wall_ns`. The *ages*
// (stalled, unread, oldest accepted) keep growing after that while their flag says so: a reader
// ages them by its own wall clock (aged_at), so an owner parked for minutes need not write.
struct lag_figures {
  epoch_t epoch = 0;                 // the owner epoch they were taken under
  std::uint64_t taken_wall_ns = 0;   // CLOCK_REALTIME at the owner when taken
  runner_state state = runner_state::dormant;
  std::uint64_t lag_ms = 0, cursor_lag_ms = 0, stalled_ms = 0, unread_age_ms = 0, oldest_accepted_age_ms = 0;
  bool stalled_growing = false, unread_growing = false, oldest_accepted_growing = false;
  std::uint32_t accepted_batches = 0;
  std::uint32_t max_accepted_batches_ahead = 0;  // the cap (runner_options)
  // The owner's runner_options::max_flush_age in ms, the rhythm *following* is judged against
  // (decision 0031); 0: unknown (a writer that did not fill it), judged against following_lag_ms.
  std::uint32_t max_flush_age_ms = 0;
  std::uint32_t lag_gate = 0;                    // 0 open, 0xFFFFFFFF exceeded, else throttle µs
  std::uint32_t transient_faults = 0;            // consecutive (§10.5)
  readiness_reason last_fault = readiness_reason::none;
  std::uint32_t log_count = 0;          // the registration's logs (may exceed logs.size())
  std::vector<log_lag_figures> logs;    // at most lag_log_slots, attach order
  std::optional<link_figures> link;     // a remote backend's link (issue 28); absent otherwise
  // The verify (issue 31) as runner_metrics has it: one running, the last successful one (its
  // records and age, growing; each log's sequence in `logs`), verifies that found a difference.
  bool verifying = false, verified = false;
  std::uint64_t verified_records = 0, verified_age_ms = 0, verify_failures = 0;
  std::uint64_t verify_read_entries = 0, verify_expected_entries = 0;  // the running scan's
  std::int64_t verify_eta_ms = -1;                                    // −1: not known

  // The figures as they stand at `now_wall_ns`: every growing age advanced by the time since
  // taken_wall_ns (never backwards), lag_ms the largest component again.
  lag_figures aged_at(std::uint64_t now_wall_ns) const;
};

inline bool operator==(const lag_figures& a, const lag_figures& b) {
  return a.epoch == b.epoch && a.taken_wall_ns == b.taken_wall_ns && a.state == b.state
         && a.lag_ms == b.lag_ms && a.cursor_lag_ms == b.cursor_lag_ms && a.stalled_ms == b.stalled_ms
         && a.unread_age_ms == b.unread_age_ms && a.oldest_accepted_age_ms == b.oldest_accepted_age_ms
         && a.stalled_growing == b.stalled_growing && a.unread_growing == b.unread_growing
         && a.oldest_accepted_growing == b.oldest_accepted_growing && a.accepted_batches == b.accepted_batches
         && a.max_accepted_batches_ahead == b.max_accepted_batches_ahead
         && a.max_flush_age_ms == b.max_flush_age_ms && a.lag_gate == b.lag_gate
         && a.transient_faults == b.transient_faults && a.last_fault == b.last_fault
         && a.log_count == b.log_count && a.logs == b.logs && a.link == b.link && a.verifying == b.verifying
         && a.verified == b.verified && a.verified_records == b.verified_records
         && a.verified_age_ms == b.verified_age_ms && a.verify_failures == b.verify_failures
         && a.verify_read_entries == b.verify_read_entries && a.verify_expected_entries == b.verify_expected_entries
         && a.verify_eta_ms == b.verify_eta_ms;
}
inline bool operator!=(const lag_figures& a, const lag_figures& b) { return !(a == b); }

inline constexpr std::uint32_t lag_gate_exceeded = 0xFFFFFFFFu;

// The figures runner_metrics holds at the time metrics() ran, under `state` with the owner's
// options (the cap, max_flush_age): the components, accepted batches, gate, faults, every log's
// sequence lag (read rate 0, headroom −1). An age that is non-zero is marked growing
// (runner_metrics cannot tell more); the wall time is 0.
lag_figures lag_figures_of(const runner_metrics& m, runner_state state, const runner_options& options);

// How readers label log `position` of `lag.logs` (`dix status`, the Prometheus `log` label): its
// name, or its position in attach order in decimal when the figures carry no name (a layout-1
// metrics segment's, decision 0030).
std::string log_label(const lag_figures& lag, std::size_t position);

// following: a healthy owner behind a steady writer, its durable position trailing the log only
// by the work of the next flush; catching up: a backlog materially larger than that.
enum class index_activity : std::uint8_t { unknown, idle, following, catching_up, stalled };
// "backend-deferred", "barrier", "accepted-cap", "log-unreadable", "rebuild", "gate",
// "unavailable"; none while not stalled.
enum class stall_cause : std::uint8_t { none, backend_deferred, barrier, accepted_cap, log_unreadable, rebuild, gate,
                                        unavailable };

// "unknown", "idle", "following", "catching-up", "stalled"
std::string_view to_string(index_activity a) noexcept;
std::string_view to_string(stall_cause c) noexcept;

struct attribution_options {
  // An age (unread, oldest accepted, waiting-durable's stall) counts as stuck once it is this
  // old and still growing; younger, it is the pipeline's rhythm (a flush not yet due).
  // Default: 2000 (twice the default max_flush_age of runner_options, so one flush may pass).
  // Figures that carry the owner's max_flush_age are judged against the larger of this and
  // twice that (stuck_limit_ms; decision 0031).
  std::uint64_t stuck_after_ms = 2000;
  // A lag up to the following limit, with the catch-up ETA (when a read rate is known) no longer
  // either, is following, not catching up: a steady writer keeps the durable position up to one
  // flush interval (the owner's max_flush_age) behind, plus the flush's own barrier and the
  // 250 ms publication interval. The limit is the larger of following_lag_ms and the figures'
  // max_flush_age_ms + following_margin_ms; following_lag_ms alone when the figures do not carry
  // max_flush_age (0). Default: 1500 (max_flush_age's default of 1000 plus the margin).
  std::uint64_t following_lag_ms = 1500;
  // Default: 500 (the barrier and the publication interval; decision 0031).
  std::uint64_t following_margin_ms = 500;
};

// The age at which a growing age of these figures counts as stuck under `options`.
std::uint64_t stuck_limit_ms(const lag_figures& lag, const attribution_options& options = {});
// The lag (and ETA) up to which figures read as following under `options`.
std::uint64_t following_limit_ms(const lag_figures& lag, const attribution_options& options = {});

struct activity_report {
  index_activity activity = index_activity::unknown;
  stall_cause cause = stall_cause::none;
  std::uint64_t lag_ms = 0;
  std::uint64_t read_per_s = 0;             // catching up: the slowest behind log's read rate
  std::optional<std::uint64_t> eta_ms;      // catching up with a known rate: time to the log's end
  std::string words;                        // one sentence for a person ("stalled: the backend defers …")
};

// Pure. `lag` absent (no owner figures of the slot's epoch): unknown, unless readiness alone
// tells (rebuilding, needs-rebuild, unavailable). The precedence of causes, first wins: rebuild
// (readiness rebuilding/needs-rebuild, or runner rebuilding), unavailable, backend-deferred
// (runner deferred: at once, a backend that says wait is a hold), accepted-cap (waiting-durable
// for stuck_limit_ms, or a stuck oldest accepted age, with accepted_batches at the cap), barrier
// (the same below the cap), log-unreadable (a stuck unread age with no reads, or transient
// faults), gate (lag_gate not open and no other cause); then idle (lag 0, protocol.md §13.1),
// following (lag and ETA at most following_limit_ms) or catching up. "Stuck": at least
// stuck_limit_ms and still growing.
activity_report attribute(const readiness& r, const std::optional<lag_figures>& lag,
                          const attribution_options& options = {});

}  // namespace dix
