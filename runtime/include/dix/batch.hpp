// What a runner delivers to a backend (api.md §4, protocol.md §4.6): the transactions of one
// chunk of the log, the last-write-wins record view with each key's state resolved once from the
// primary store, and the cursor the chunk completes (absent on scan chunks).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <dix/cursor.hpp>
#include <dix/result.hpp>

namespace dix {

enum class state_kind : std::uint8_t {
  record,       // present: `projection` holds the backend-encoded value
  absent,       // deleted (or never written): backends remove any entry
  unindexable,  // present but not indexable: `reason` holds a code; backends remove any entry
};

struct record_state {
  state_kind kind = state_kind::absent;
  std::uint64_t version = 0;  // the stored value's version (header time); 0 when absent
  std::string projection;     // state_kind::record only
  std::string reason;         // state_kind::unindexable only: a code, never record content
};

inline bool operator==(const record_state& a, const record_state& b) {
  return a.kind == b.kind && a.version == b.version && a.projection == b.projection && a.reason == b.reason;
}
inline bool operator!=(const record_state& a, const record_state& b) { return !(a == b); }

struct record_entry {
  std::string log;
  std::uint32_t table = 0;
  std::string record_id;
  std::uint64_t log_version = 0;  // header time of the key's last collected occurrence
  record_state state;
};

inline bool operator==(const record_entry& a, const record_entry& b) {
  return a.log == b.log && a.table == b.table && a.record_id == b.record_id && a.log_version == b.log_version
         && a.state == b.state;
}
inline bool operator!=(const record_entry& a, const record_entry& b) { return !(a == b); }

struct mutation {
  std::uint32_t record = 0;       // index into batch::records
  std::uint64_t log_version = 0;  // header time of the transaction
};

inline bool operator==(const mutation& a, const mutation& b) {
  return a.record == b.record && a.log_version == b.log_version;
}
inline bool operator!=(const mutation& a, const mutation& b) { return !(a == b); }

struct log_transaction {
  std::string log;
  std::uint64_t sequence = 0;
  index_time_t time = 0;
  std::vector<mutation> mutations;
};

inline bool operator==(const log_transaction& a, const log_transaction& b) {
  return a.log == b.log && a.sequence == b.sequence && a.time == b.time && a.mutations == b.mutations;
}
inline bool operator!=(const log_transaction& a, const log_transaction& b) { return !(a == b); }

struct batch {
  epoch_t epoch = 0;
  std::vector<log_transaction> transactions;  // empty for scan chunks and cursor-only batches
  std::vector<record_entry> records;          // last-write-wins view, first-occurrence order
  std::optional<cursor> through;              // absent on scan chunks
  bool rebuild = false;
  std::uint64_t bytes = 0;                    // the chunk estimate of protocol.md §4.3
};

inline bool operator==(const batch& a, const batch& b) {
  return a.epoch == b.epoch && a.transactions == b.transactions && a.records == b.records
         && a.through == b.through && a.rebuild == b.rebuild && a.bytes == b.bytes;
}
inline bool operator!=(const batch& a, const batch& b) { return !(a == b); }

// Shared batches (a message's batch_msg, a tailer chunk's delivery) compare by value: equal when
// both are null, or both point to equal batches (the same batch being the cheap case). A batch is
// a plain immutable value, so two messages carrying equal batches say the same thing.
inline bool same_batch(const std::shared_ptr<const batch>& a, const std::shared_ptr<const batch>& b) {
  if (a == b) return true;
  return a != nullptr && b != nullptr && *a == *b;
}

}  // namespace dix
