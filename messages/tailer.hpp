// runner ↔ log tailer (actors.md §2). The tailer owns every primary-store I/O of one id: WAL
// reads, scans, the sync before delivery (protocol.md §4.8) and the system commits the runner
// asks for. The conversation is asynchronous both ways: the runner sends a command, the tailer
// answers with an event to the command's sender, echoing `gen` where the table lists it; the
// runner drops answers of another generation (protocol.md §1.3). epoch_change (runner → tailer,
// proxy) lives in delivery.hpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>

#include <dix/cursor.hpp>
#include <dix/readiness.hpp>
#include <dix/result.hpp>

#include "core/tailer_core.hpp"  // turn_budgets, log_progress
#include "messages/values.hpp"

namespace dix {

// tailer_core's turn_budgets (protocol.md §4.1), carried as is.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, turn_budgets& x) {
  return f(caf::meta::type_name("dix.turn_budgets"), x.max_transactions_per_turn,
           x.max_bytes_per_turn, x.max_milliseconds_per_turn, x.max_chunk_records,
           x.max_chunk_bytes);
}

// A coverage capture (protocol.md §12.1): the minimum index time over the logs and, per log, the
// latest sequence, both read under each store's commit mutex.
struct coverage_capture {
  index_time_t time = 0;
  dix::positions positions;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, coverage_capture& x) {
  return f(caf::meta::type_name("dix.coverage_capture"), x.time, x.positions);
}

// One log's sequences after a turn: tailer_core's log_progress {log, read_sequence,
// latest_sequence}, carried as is (metrics, protocol.md §14.2; unread age, §13.1).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_progress& x) {
  return f(caf::meta::type_name("dix.log_progress"), x.log, x.read_sequence, x.latest_sequence);
}

// -- open -------------------------------------------------------------------------------------

// Command: (re)open the registration's logs and verify the anchors (exact resume, protocol.md
// §3.1–3.2). Answered by log_opened or log_fault.
struct log_open {
  std::uint64_t gen = 0;
  // The durable cursor, or the rebuild boundary (protocol.md §11.7); the table marks it
  // optional: absent opens no anchor.
  std::optional<dix::cursor> from;
  std::vector<std::string> logs;  // the registration's logs (protocol.md §2.5), attach order
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_open& x) {
  return f(caf::meta::type_name("dix.log_open"), x.gen, wire::opt(x.from), x.logs);
}

// Event: every anchor verified.
struct log_opened {
  std::uint64_t gen = 0;
  // Per log, the anchor transaction's end sequence (sequence + op count − 1), which coverage
  // association compares with captured positions (protocol.md §12.2).
  dix::positions anchor_ends;
  // The cursor now installed: `from`, or the start cursor when the log_open had none (an index
  // built from sequence 1, docs/decisions/0002). The runner's offered list starts with it.
  std::optional<dix::cursor> installed;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_opened& x) {
  return f(caf::meta::type_name("dix.log_opened"), x.gen, x.anchor_ends, wire::opt(x.installed));
}

// -- pull -------------------------------------------------------------------------------------

// Command: one drain turn (protocol.md §4). Answered by log_chunk or log_fault.
struct log_pull {
  std::uint64_t gen = 0;
  epoch_t epoch = 0;  // stamped on the batch
  turn_budgets budgets;
  std::optional<dix::cursor> last_offered;  // where `through` starts (protocol.md §4.5)
  bool capture = false;                     // take a coverage capture first (§12.1)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_pull& x) {
  return f(caf::meta::type_name("dix.log_pull"), x.gen, x.epoch, x.budgets,
           wire::opt(x.last_offered), x.capture);
}

// Event: the outcome of one turn, sent only after the sync of protocol.md §4.8. Fields follow
// the actors.md table literally; per-turn figures are counts for this turn, not totals.
struct log_chunk {
  std::uint64_t gen = 0;
  batch_msg batch;          // empty: nothing to deliver this turn
  bool cut_open = false;    // a transaction is cut: `through` cannot pass it yet (§4.5, §5.5)
  bool end_of_log = false;  // every log caught up and nothing carried (§5.6)
  std::optional<coverage_capture> capture;  // present when the pull asked for one
  std::uint64_t bytes_read = 0;             // WriteBatch data size read this turn
  std::uint64_t unindexable = 0;            // records resolved as unindexable (§4.4)
  std::vector<log_progress> logs;           // attach order
  std::uint64_t log_reopens = 0;            // iterator re-opens so far, all logs (§3.4)
  std::uint64_t wal_syncs = 0;              // SyncWAL calls made for this batch (§4.8)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_chunk& x) {
  return f(caf::meta::type_name("dix.log_chunk"), x.gen, x.batch, x.cut_open, x.end_of_log,
           wire::opt(x.capture), x.bytes_read, x.unindexable, x.logs, x.log_reopens,
           x.wal_syncs);
}

// Event: open, pull, scan or boundary failed. Suspect faults carry their reason; transient ones
// (protocol.md §10.5) set `transient` and leave `reason` at none.
struct log_fault {
  std::uint64_t gen = 0;
  bool transient = false;
  readiness_reason reason = readiness_reason::none;
  std::string text;  // local diagnostics only (status message); never stored in the slot
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_fault& x) {
  return f(caf::meta::type_name("dix.log_fault"), x.gen, x.transient, x.reason, x.text,
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.log_fault.reason", x.reason, readiness_reason::none,
                                     readiness_reason::registration_changed);
           }));
}

// -- metadata writes (formats.md §5) ------------------------------------------------------------

enum class meta_kind : std::uint8_t {
  epoch,    // epoch/<id> = value (the minted epoch), before anything uses it (protocol.md §9.3)
  condemn,  // condemned/<id> = 01; value unused (protocol.md §10.4)
  settle,   // registration/<id> = value (the fingerprint) and delete condemned/<id>, one commit
};

// Command: one system commit (sync) in the home store, under its commit mutex.
struct meta_write {
  meta_kind kind = meta_kind::epoch;
  std::uint64_t value = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, meta_write& x) {
  return f(caf::meta::type_name("dix.meta_write"), x.kind, x.value,
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.meta_write.kind", x.kind, meta_kind::epoch,
                                     meta_kind::settle);
           }));
}

// Event: the commit's outcome. The table lists no gen for this pair; kind and value are echoed
// so the runner can match the answer (an epoch is never written twice, protocol.md §9.3).
struct meta_written {
  meta_kind kind = meta_kind::epoch;
  std::uint64_t value = 0;
  caf::error error;  // none: committed and synced
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, meta_written& x) {
  return f(caf::meta::type_name("dix.meta_written"), x.kind, x.value, x.error,
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.meta_written.kind", x.kind, meta_kind::epoch,
                                     meta_kind::settle);
           }));
}

// Command: read condemned/<id> and registration/<id> from the home store (protocol.md §9.2
// step 3). → meta_state
struct meta_read {
  std::uint64_t gen = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, meta_read& x) {
  return f(caf::meta::type_name("dix.meta_read"), x.gen);
}

// Event: what the read found; `error` set: the read failed (a transient fault, §10.5).
struct meta_state {
  std::uint64_t gen = 0;
  bool condemned = false;
  std::optional<std::uint64_t> fingerprint;
  caf::error error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, meta_state& x) {
  return f(caf::meta::type_name("dix.meta_state"), x.gen, x.condemned, wire::opt(x.fingerprint), x.error);
}

// -- rebuild boundary and scan (protocol.md §11.5–11.7) --------------------------------------

// Command: commit boundary/<id> = epoch in every store of the registration's logs, take the
// snapshots, check the retention fit.
struct boundary_capture {
  std::uint64_t gen = 0;
  epoch_t epoch = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, boundary_capture& x) {
  return f(caf::meta::type_name("dix.boundary_capture"), x.gen, x.epoch);
}

// Event: the boundary cursor, or the error that failed the attempt (a failed commit,
// log_retention from the retention fit with the figures in the context).
struct boundary {
  std::uint64_t gen = 0;
  std::optional<dix::cursor> cursor;  // present exactly when error is none
  caf::error error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, boundary& x) {
  return f(caf::meta::type_name("dix.boundary"), x.gen, wire::opt(x.cursor), x.error);
}

// Command: the next scan chunk from the boundary snapshots.
struct scan_pull {
  std::uint64_t gen = 0;
  epoch_t epoch = 0;
  turn_budgets budgets;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scan_pull& x) {
  return f(caf::meta::type_name("dix.scan_pull"), x.gen, x.epoch, x.budgets);
}

// Event: one scan chunk (rebuild = true, no through), synced like a log_chunk (§4.8).
struct scan_chunk {
  std::uint64_t gen = 0;
  batch_msg batch;      // empty when this pull found nothing more
  bool last = false;    // the snapshots are exhausted
  std::uint64_t records_scanned = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scan_chunk& x) {
  return f(caf::meta::type_name("dix.scan_chunk"), x.gen, x.batch, x.last, x.records_scanned);
}

}  // namespace dix
