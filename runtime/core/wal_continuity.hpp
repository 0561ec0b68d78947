// The continuity rules of one log iterator (protocol.md §3.2, §3.4, §3.5), kept apart from
// RocksDB so they are tested with plain values:
//   * exact resume: after expect_exact(s, t) the next batch must have sequence s and, when t ≠ 0,
//     header time t; anything else is log_retention (RocksDB silently skips purged WAL files);
//   * within an iterator each batch starts at the previous batch's end + 1 and its header time
//     exceeds the previous one's, else log_corrupt.
#pragma once

#include <cstdint>

#include <dix/result.hpp>

namespace dix {

class wal_continuity {
 public:
  // The next checked batch must be exactly `sequence` (and `time`, unless 0). Used at open
  // (an anchor, or sequence 1 for a log read from its start) and at a re-open after a WAL
  // switch (last_end() + 1, time 0; the time must still exceed the previous batch's).
  void expect_exact(std::uint64_t sequence, index_time_t time) noexcept {
    expected_sequence_ = sequence;
    expected_time_ = time;
  }

  // log_retention when an exact sequence is expected and `sequence` is not it; else success.
  result<void> check_expected_sequence(std::uint64_t sequence) const;

  // Checks the batch [sequence, sequence + count) with header time `time` and records it.
  result<void> check(std::uint64_t sequence, std::uint32_t count, index_time_t time);

  std::uint64_t last_end() const noexcept { return last_end_; }     // 0 before any batch
  index_time_t last_time() const noexcept { return last_time_; }    // 0 before any batch
  bool expecting() const noexcept { return expected_sequence_ != 0; }
  std::uint64_t expected_sequence() const noexcept { return expected_sequence_; }  // 0: none pending

 private:
  std::uint64_t expected_sequence_ = 0;  // 0: no exact expectation pending
  index_time_t expected_time_ = 0;
  std::uint64_t last_end_ = 0;
  index_time_t last_time_ = 0;
};

}  // namespace dix
