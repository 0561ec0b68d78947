// What a runtime says about one of its registrations (api.md §6, protocol.md §14): the runner's
// local state and the metrics of the index it drives. Plain values; std only.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <dix/readiness.hpp>
#include <dix/result.hpp>

namespace dix {

// STATES (protocol.md §14.1) of the runner of one registration, local to its runtime:
//
//   dormant ──wake──► waiting_lock ──granted──► running ⇄ idle (caught up)
//                                                │  ├─► deferred (the backend said wait)
//                                                │  └─► waiting_durable (accepted-ahead cap)
//                                                ├─► needs_rebuild / unavailable (condemned)
//                                                └─► releasing (shutdown pending) ──► stopped
//
// `rebuilding` is the runner building an index; `dormant` a registration whose id another
// runner of the process owns (or nothing woke yet).
enum class runner_state : std::uint8_t {
  dormant, waiting_lock, running, idle, deferred, waiting_durable, rebuilding, needs_rebuild,
  unavailable, releasing, stopped };

// "dormant", "waiting-lock", "waiting-durable", … (protocol.md §14.1 spellings).
std::string_view to_string(runner_state s) noexcept;

struct runner_status {
  runner_state state = runner_state::dormant;
  readiness_reason reason = readiness_reason::none;  // of the last condemnation or fault
  epoch_t epoch = 0;                                 // the runner's current owner epoch, 0 = none
  std::string message;  // local text for the last fault, may quote the backend; never shared
};

inline bool operator==(const runner_status& a, const runner_status& b) {
  return a.state == b.state && a.reason == b.reason && a.epoch == b.epoch && a.message == b.message;
}
inline bool operator!=(const runner_status& a, const runner_status& b) { return !(a == b); }

// Per log of a registration (protocol.md §14.2).
struct log_metrics {
  std::string log;
  std::uint64_t read_sequence = 0;     // end of the last transaction the tailer read
  std::uint64_t durable_sequence = 0;  // the durable cursor's anchor sequence
  std::uint64_t latest_sequence = 0;   // the store's latest sequence at the last turn
  std::uint64_t sequence_lag = 0;      // latest − durable (0 when not behind)
  // protocol.md §13.2, sampled per store at most once per lag tick: live + archived WAL bytes,
  // the first sequence of the oldest retained file (0: none), and the retention forecast —
  // wal_ttl − archive age of the file holding the durable anchor (−1: a live file or no TTL) and
  // the size limit − archived bytes (−1: no limit). Headroom near 0: `log-retention` is coming.
  std::uint64_t wal_retained_bytes = 0, wal_oldest_sequence = 0;
  std::int64_t retention_headroom_ms = -1, retention_headroom_bytes = -1;
  // The log's sequence the last successful verify proved the index equal at (issue 31); 0: none.
  std::uint64_t verified_sequence = 0;
};

inline bool operator==(const log_metrics& a, const log_metrics& b) {
  return a.log == b.log && a.read_sequence == b.read_sequence && a.durable_sequence == b.durable_sequence
         && a.latest_sequence == b.latest_sequence && a.sequence_lag == b.sequence_lag
         && a.wal_retained_bytes == b.wal_retained_bytes && a.wal_oldest_sequence == b.wal_oldest_sequence
         && a.retention_headroom_ms == b.retention_headroom_ms
         && a.retention_headroom_bytes == b.retention_headroom_bytes && a.verified_sequence == b.verified_sequence;
}
inline bool operator!=(const log_metrics& a, const log_metrics& b) { return !(a == b); }

// protocol.md §14.2. Durations are milliseconds computed at the time of the call; owner figures
// are 0 on a runner that does not own its id.
struct runner_metrics {
  dix::readiness readiness;  // the slot as any process reads it
  bool owner = false;
  epoch_t epoch = 0;
  std::uint64_t accepted_batches = 0;  // offered entries beyond the durable one
  std::uint64_t accepted_bytes = 0, accepted_mutations = 0;  // unanchored + non-durable offered
  std::uint64_t deferred_bytes = 0;    // the batch held after `deferred`
  // protocol.md §13.1: the age of the oldest non-durable accepted work (cursor-only batches
  // aside), the cursor lag, the time parked in deferred/waiting-durable, the unread age; lag_ms
  // is the largest of the four.
  std::uint64_t oldest_accepted_age_ms = 0, cursor_lag_ms = 0, stalled_ms = 0, unread_age_ms = 0;
  std::uint64_t lag_ms = 0;
  std::uint32_t lag_gate = 0;           // the slot's stored gate value (0 = open)
  std::uint32_t rebuild_attempts = 0;   // the slot's
  std::uint64_t quiescence_age_ms = 0;  // how long the current shutdown has been pending
  index_time_t coverage_time = 0;       // the slot's; 0 = none published
  std::uint64_t coverage_age_ms = 0;    // wall now − coverage_time, ≥ 0; 0 while none is published
  std::uint64_t delivered_batches = 0, delivered_records = 0;  // since registration
  std::array<std::uint64_t, 4> flushes{};  // flush requests, indexed by flush_reason
  std::uint64_t wal_syncs = 0;             // SyncWAL calls before delivery (protocol.md §4.8)
  std::uint64_t unindexable_records = 0;   // projections, record-corrupt values, backend skips
  std::uint64_t log_reopens = 0;           // tailer re-opens after WAL switches (§3.4)
  std::uint32_t transient_faults = 0;      // consecutive (§10.5)
  readiness_reason last_fault = readiness_reason::none;  // the last suspect fault
  // Rebuild progress (protocol.md §11.6) of the current or last attempt: records the scan
  // delivered, the projected tables' estimated records (RocksDB's estimate-num-keys), the scan's
  // rate, and the time left at that rate (0 when the scan is over or nothing is known yet).
  std::uint64_t rebuilt_records = 0, estimated_records = 0, scan_records_per_s = 0, rebuild_eta_ms = 0;
  std::vector<log_metrics> logs;           // the registration's logs, attach order
  // The verify (issue 31, `dix verify`): whether one runs; whether one succeeded since the
  // registration, and then the records it proved, how long ago it ended and each log's sequence
  // (log_metrics::verified_sequence); the verifies that found a difference since the registration.
  bool verifying = false, verified = false;
  std::uint64_t verified_records = 0, verified_age_ms = 0, verify_failures = 0;
  // While a verify scans: the entries read (index and primary together), those expected, and the
  // time left at the pace so far (−1: not known yet). 0, 0, −1 otherwise.
  std::uint64_t verify_read_entries = 0, verify_expected_entries = 0;
  std::int64_t verify_eta_ms = -1;
};

inline bool operator==(const runner_metrics& a, const runner_metrics& b) {
  return a.readiness == b.readiness && a.owner == b.owner && a.epoch == b.epoch
         && a.accepted_batches == b.accepted_batches && a.accepted_bytes == b.accepted_bytes
         && a.accepted_mutations == b.accepted_mutations && a.deferred_bytes == b.deferred_bytes
         && a.oldest_accepted_age_ms == b.oldest_accepted_age_ms && a.cursor_lag_ms == b.cursor_lag_ms
         && a.stalled_ms == b.stalled_ms && a.unread_age_ms == b.unread_age_ms && a.lag_ms == b.lag_ms
         && a.lag_gate == b.lag_gate && a.rebuild_attempts == b.rebuild_attempts
         && a.quiescence_age_ms == b.quiescence_age_ms && a.coverage_time == b.coverage_time
         && a.coverage_age_ms == b.coverage_age_ms && a.delivered_batches == b.delivered_batches
         && a.delivered_records == b.delivered_records && a.flushes == b.flushes && a.wal_syncs == b.wal_syncs
         && a.unindexable_records == b.unindexable_records && a.log_reopens == b.log_reopens
         && a.transient_faults == b.transient_faults && a.last_fault == b.last_fault
         && a.rebuilt_records == b.rebuilt_records && a.estimated_records == b.estimated_records
         && a.scan_records_per_s == b.scan_records_per_s && a.rebuild_eta_ms == b.rebuild_eta_ms
         && a.logs == b.logs && a.verifying == b.verifying && a.verified == b.verified
         && a.verified_records == b.verified_records && a.verified_age_ms == b.verified_age_ms
         && a.verify_failures == b.verify_failures && a.verify_read_entries == b.verify_read_entries
         && a.verify_expected_entries == b.verify_expected_entries && a.verify_eta_ms == b.verify_eta_ms;
}
inline bool operator!=(const runner_metrics& a, const runner_metrics& b) { return !(a == b); }

// A rebuild's scan progress (protocol.md §11.6) as the owner publishes it for every process (the
// metrics segment, docs/formats-metrics.md; `dix status`, `dix rebuild --wait`): the figures of
// runner_metrics, taken under the owner epoch of the attempt. A reader trusts figures only of the
// epoch the readiness slot holds now: any other epoch's belong to an earlier attempt or owner.
struct rebuild_progress {
  epoch_t epoch = 0;                    // the attempt's owner epoch
  std::uint64_t rebuilt_records = 0;    // records the scan delivered so far
  std::uint64_t estimated_records = 0;  // in the projected tables (RocksDB's estimate-num-keys)
  std::uint64_t scan_records_per_s = 0;
  std::uint64_t rebuild_eta_ms = 0;     // 0 once the scan ended, or while no rate is known
  bool scan_ended = false;              // the boundary chunk was accepted: the drain replays from it
};

inline bool operator==(const rebuild_progress& a, const rebuild_progress& b) {
  return a.epoch == b.epoch && a.rebuilt_records == b.rebuilt_records
         && a.estimated_records == b.estimated_records && a.scan_records_per_s == b.scan_records_per_s
         && a.rebuild_eta_ms == b.rebuild_eta_ms && a.scan_ended == b.scan_ended;
}
inline bool operator!=(const rebuild_progress& a, const rebuild_progress& b) { return !(a == b); }

}  // namespace dix
