// Batches for backend tests, as a runner hands them over: records of log "main", table 1, a
// cursor per sequence, an epoch and a chunk estimate. The projection is the backend's own
// encoding, made by the test. Standard library and the public API only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <dix/batch.hpp>
#include <dix/cursor.hpp>

namespace dix::test {

// The cursor a batch with `through` = sequence carries: one log, time 1000 + sequence.
inline cursor make_cursor(std::uint64_t sequence) {
  return cursor::make({log_position{"main", "identity-1", sequence, 1000 + sequence}}).value();
}

// Record `id` present with `projection` at `version`.
inline record_entry present(const std::string& id, std::string projection, std::uint64_t version) {
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

inline record_entry absent(const std::string& id) {
  record_entry e;
  e.log = "main";
  e.table = 1;
  e.record_id = id;
  e.state.kind = state_kind::absent;
  return e;
}

// A batch of `epoch` with `records`, completing cursor `through` (none: a scan chunk).
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
