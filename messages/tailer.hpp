// runner ↔ log tailer (actors.md §2). The tailer owns every primary-store I/O of one id: WAL
// reads, the sync before delivery (protocol.md §4.8) and the system commits the runner asks for.
// The conversation is asynchronous both ways: the runner sends a command, the tailer answers
// with an event to the command's sender, echoing `gen` where the table lists it; the runner
// drops answers of another generation (protocol.md §1.3). A rebuild (§11.5–§11.7) asks for the
// boundary (boundary_capture → boundary_captured) and then for scan chunks (scan_pull →
// scan_chunk) before it opens the logs at the boundary; their faults come as log_fault.
#pragma once

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

#include "core/tailer_core.hpp"  // log_progress, tailer_chunk, boundary_found, scan_step
#include "core/turn_budgets.hpp"
#include "messages/values.hpp"

namespace dix {

// tailer_core's turn_budgets (protocol.md §4.1), carried as is.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, turn_budgets& x) {
  return f(caf::meta::type_name("dix.turn_budgets"), x.max_transactions_per_turn,
           x.max_bytes_per_turn, x.max_milliseconds_per_turn, x.max_chunk_records,
           x.max_chunk_bytes);
}

// One log's sequences after a turn: tailer_core's log_progress {log, read_sequence,
// latest_sequence}, carried as is (metrics, protocol.md §14.2; unread age, §13.1).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_progress& x) {
  return f(caf::meta::type_name("dix.log_progress"), x.log, x.read_sequence, x.latest_sequence);
}

// A coverage capture (protocol.md §12.1), carried inside log_chunk.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, coverage_capture& x) {
  return f(caf::meta::type_name("dix.coverage_capture"), x.time, x.positions);
}

// -- open -------------------------------------------------------------------------------------

// Command: (re)open the registration's logs and verify the anchors (exact resume, protocol.md
// §3.1–3.2). Answered by log_opened or log_fault.
struct log_open {
  std::uint64_t gen = 0;
  // The durable cursor, or the rebuild boundary (protocol.md §11.7); the table marks it
  // optional: absent opens no anchor.
  std::optional<dix::cursor> from;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_open& x) {
  return f(caf::meta::type_name("dix.log_open"), x.gen, wire::opt(x.from));
}

inline bool operator==(const log_open& a, const log_open& b) {
  return a.gen == b.gen && a.from == b.from;
}
inline bool operator!=(const log_open& a, const log_open& b) { return !(a == b); }

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

inline bool operator==(const log_opened& a, const log_opened& b) {
  return a.gen == b.gen && a.anchor_ends == b.anchor_ends && a.installed == b.installed;
}
inline bool operator!=(const log_opened& a, const log_opened& b) { return !(a == b); }

// -- pull -------------------------------------------------------------------------------------

// Command: one drain turn (protocol.md §4). Answered by log_chunk or log_fault.
struct log_pull {
  std::uint64_t gen = 0;
  epoch_t epoch = 0;  // stamped on the batch
  turn_budgets budgets;
  bool capture = false;  // take the coverage capture before reading (§12.1); the chunk carries it
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_pull& x) {
  return f(caf::meta::type_name("dix.log_pull"), x.gen, x.epoch, x.budgets, x.capture);
}

inline bool operator==(const log_pull& a, const log_pull& b) {
  return a.gen == b.gen && a.epoch == b.epoch && a.budgets == b.budgets && a.capture == b.capture;
}
inline bool operator!=(const log_pull& a, const log_pull& b) { return !(a == b); }

// tailer_core's chunk, carried as is. Its batch travels as a batch_msg does (values.hpp): the
// shared pointer in process, the whole batch on the wire, a new one on load.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tailer_chunk& x) {
  batch_msg delivery{x.delivery};
  return f(caf::meta::type_name("dix.tailer_chunk"), delivery, x.cut_open, x.end_of_log, x.bytes_read,
           x.transactions_read, x.primary_reads, x.unindexable, x.wal_syncs, x.log_reopens, x.logs,
           x.through_ends, wire::opt(x.capture), x.fence_reached, caf::meta::load_callback([&x, &delivery] {
             x.delivery = std::move(delivery.value);
             return caf::error{};
           }));
}

// Event: the outcome of one turn, sent only after the sync of protocol.md §4.8: the core's chunk
// as is (null delivery: nothing to deliver this turn; per-turn figures are this turn's counts).
struct log_chunk {
  std::uint64_t gen = 0;
  tailer_chunk chunk;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, log_chunk& x) {
  return f(caf::meta::type_name("dix.log_chunk"), x.gen, x.chunk);
}

inline bool operator==(const log_chunk& a, const log_chunk& b) {
  return a.gen == b.gen && a.chunk == b.chunk;
}
inline bool operator!=(const log_chunk& a, const log_chunk& b) { return !(a == b); }

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
                                     last_readiness_reason);
           }));
}

inline bool operator==(const log_fault& a, const log_fault& b) {
  return a.gen == b.gen && a.transient == b.transient && a.reason == b.reason && a.text == b.text;
}
inline bool operator!=(const log_fault& a, const log_fault& b) { return !(a == b); }

// -- rebuild (protocol.md §11.5–§11.7) ----------------------------------------------------------

// Command: commit boundary/<id> in every store of the registration's logs, take the snapshots,
// check the retention fit. Answered by boundary_captured or log_fault.
struct boundary_capture {
  std::uint64_t gen = 0;
  epoch_t epoch = 0;  // the rebuild epoch, the boundary record's value
  std::uint64_t scan_bytes_per_s = 0;  // for the retention fit: the last completed scan's rate
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, boundary_capture& x) {
  return f(caf::meta::type_name("dix.boundary_capture"), x.gen, x.epoch, x.scan_bytes_per_s);
}

inline bool operator==(const boundary_capture& a, const boundary_capture& b) {
  return a.gen == b.gen && a.epoch == b.epoch && a.scan_bytes_per_s == b.scan_bytes_per_s;
}
inline bool operator!=(const boundary_capture& a, const boundary_capture& b) { return !(a == b); }

// tailer_core's boundary_found, carried as is.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, boundary_found& x) {
  return f(caf::meta::type_name("dix.boundary_found"), wire::opt(x.boundary), x.estimated_records, x.estimated_bytes,
           x.wal_syncs);
}

// Event: the boundary cursor and the projected tables' estimates (tailer_core's boundary_outcome
// without its fault, which travels as log_fault). `found.boundary` is always set by the tailer.
struct boundary_captured {
  std::uint64_t gen = 0;
  boundary_found found;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, boundary_captured& x) {
  return f(caf::meta::type_name("dix.boundary_captured"), x.gen, x.found);
}

inline bool operator==(const boundary_captured& a, const boundary_captured& b) {
  return a.gen == b.gen && a.found == b.found;
}
inline bool operator!=(const boundary_captured& a, const boundary_captured& b) { return !(a == b); }

// Command: one scan chunk (protocol.md §11.6). Answered by scan_chunk or log_fault.
struct scan_pull {
  std::uint64_t gen = 0;
  epoch_t epoch = 0;  // stamped on the batch
  turn_budgets budgets;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scan_pull& x) {
  return f(caf::meta::type_name("dix.scan_pull"), x.gen, x.epoch, x.budgets);
}

inline bool operator==(const scan_pull& a, const scan_pull& b) {
  return a.gen == b.gen && a.epoch == b.epoch && a.budgets == b.budgets;
}
inline bool operator!=(const scan_pull& a, const scan_pull& b) { return !(a == b); }

// tailer_core's scan_step, carried as is; its batch travels as a batch_msg does (values.hpp).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scan_step& x) {
  batch_msg delivery{x.delivery};
  return f(caf::meta::type_name("dix.scan_step"), delivery, x.last, x.scanned, x.unindexable,
           caf::meta::load_callback([&x, &delivery] {
             x.delivery = std::move(delivery.value);
             return caf::error{};
           }));
}

// Event: tailer_core's scan_outcome without its fault: the chunk (`rebuild` set; null: the turn
// ended before a record), whether it is the boundary chunk, and its counts.
struct scan_chunk {
  std::uint64_t gen = 0;
  scan_step step;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scan_chunk& x) {
  return f(caf::meta::type_name("dix.scan_chunk"), x.gen, x.step);
}

inline bool operator==(const scan_chunk& a, const scan_chunk& b) { return a.gen == b.gen && a.step == b.step; }
inline bool operator!=(const scan_chunk& a, const scan_chunk& b) { return !(a == b); }

// -- metadata writes (formats.md §5) ------------------------------------------------------------

enum class meta_kind : std::uint8_t {
  epoch,    // epoch/<id> = value (the minted epoch), before anything uses it (protocol.md §9.3)
  condemn,  // condemned/<id> = 01; value unused (protocol.md §10.4)
  settle,   // registration/<id> = value (the fingerprint) and delete condemned/<id>, one commit
};

// Command: one system commit (sync) in the home store, under its commit mutex.
struct meta_write {
  std::uint64_t gen = 0;  // the sender's generation, echoed (the supervisor sends 0)
  meta_kind kind = meta_kind::epoch;
  std::uint64_t value = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, meta_write& x) {
  return f(caf::meta::type_name("dix.meta_write"), x.gen, x.kind, x.value,
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.meta_write.kind", x.kind, meta_kind::epoch,
                                     meta_kind::settle);
           }));
}

inline bool operator==(const meta_write& a, const meta_write& b) {
  return a.gen == b.gen && a.kind == b.kind && a.value == b.value;
}
inline bool operator!=(const meta_write& a, const meta_write& b) { return !(a == b); }

// Event: the commit's outcome, echoing gen, kind and value.
struct meta_written {
  std::uint64_t gen = 0;
  meta_kind kind = meta_kind::epoch;
  std::uint64_t value = 0;
  caf::error error;  // none: committed and synced
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, meta_written& x) {
  return f(caf::meta::type_name("dix.meta_written"), x.gen, x.kind, x.value,
           wire::err("dix.meta_written.error", x.error),
           caf::meta::load_callback([&x] {
             return wire::check_enum("dix.meta_written.kind", x.kind, meta_kind::epoch,
                                     meta_kind::settle);
           }));
}

inline bool operator==(const meta_written& a, const meta_written& b) {
  return a.gen == b.gen && a.kind == b.kind && a.value == b.value && a.error == b.error;
}
inline bool operator!=(const meta_written& a, const meta_written& b) { return !(a == b); }

// Command: read condemned/<id> and registration/<id> from the home store (protocol.md §9.2
// step 3). → meta_state
struct meta_read {
  std::uint64_t gen = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, meta_read& x) {
  return f(caf::meta::type_name("dix.meta_read"), x.gen);
}

inline bool operator==(const meta_read& a, const meta_read& b) {
  return a.gen == b.gen;
}
inline bool operator!=(const meta_read& a, const meta_read& b) { return !(a == b); }

// Event: what the read found; `error` set: the read failed (a transient fault, §10.5).
struct meta_state {
  std::uint64_t gen = 0;
  bool condemned = false;
  std::optional<std::uint64_t> fingerprint;
  caf::error error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, meta_state& x) {
  return f(caf::meta::type_name("dix.meta_state"), x.gen, x.condemned, wire::opt(x.fingerprint),
           wire::err("dix.meta_state.error", x.error));
}

inline bool operator==(const meta_state& a, const meta_state& b) {
  return a.gen == b.gen && a.condemned == b.condemned && a.fingerprint == b.fingerprint && a.error == b.error;
}
inline bool operator!=(const meta_state& a, const meta_state& b) { return !(a == b); }

}  // namespace dix
