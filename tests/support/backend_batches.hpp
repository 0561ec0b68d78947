// Batches for backend tests: cursors on one log "main" (sequence n, time 1000 + n), records of
// table 1 in it, and batches of them, as a runner would deliver them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <dix/batch.hpp>
#include <dix/cursor.hpp>

namespace dix::test {

inline cursor make_cursor(std::uint64_t sequence) {
  return cursor::make({log_position{"main", "identity-1", sequence, 1000 + sequence}}).value();
}

// Record `id` present at `version` with the backend-encoded `projection`.
inline record_entry present_record(const std::string& id, std::string projection, std::uint64_t version) {
  record_entry e;
  e.log = "main";
  e.table = 1;
  e.record_id = id;
  e.log_version = version;
  e.state.kind = state_kind::record;
  e.state.version = version;
  e.state.projection = std::move(projection);
  return e;
}

inline record_entry absent_record(const std::string& id) {
  record_entry e;
  e.log = "main";
  e.table = 1;
  e.record_id = id;
  e.state.kind = state_kind::absent;
  return e;
}

// A batch of `epoch`; `through` names make_cursor(*through); `bytes` is the chunk estimate.
inline std::shared_ptr<const batch> make_batch(epoch_t epoch, std::vector<record_entry> records,
                                               std::optional<std::uint64_t> through, std::uint64_t bytes = 100) {
  auto b = std::make_shared<batch>();
  b->epoch = epoch;
  b->records = std::move(records);
  if (through) b->through = make_cursor(*through);
  b->bytes = bytes;
  return b;
}

}  // namespace dix::test
