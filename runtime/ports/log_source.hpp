// Port: one log (a primary store's WAL) read in sequence order with exact resume.
// The RocksDB adapter is runtime/adapters/rocksdb_log_source; tests use fakes over this header.
//
// STATES
//   closed ──open()──► reading ──next() = nullopt──► caught up ──next()──► reading …
//   Any error leaves the source closed; open() again to retry (a transient io_error) — a
//   log_retention or log_corrupt will repeat, since the log itself is at fault.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <dix/result.hpp>
#include <dix/wal.hpp>  // wal_retention

#include "core/wal_batch.hpp"

namespace dix {

class log_source {
 public:
  virtual ~log_source() = default;

  virtual const std::string& log_name() const noexcept = 0;
  virtual const std::string& identity() const noexcept = 0;

  // Positions the reader at `sequence` and returns that transaction, verified: it must exist,
  // be the first batch returned, have exactly that sequence and, when `time` ≠ 0, that header
  // time — else log_retention (protocol.md §3.2). A cursor anchor is opened with its (sequence,
  // time) and the returned anchor is skipped by the caller; a log read from its start is opened
  // at (1, 0). log_corrupt when the batch is invalid, or when a later batch comes first while the
  // retained WAL still reaches back to `sequence` (a damaged record, not a purge; decision 0014);
  // io_error when the store is unreachable.
  virtual result<wal_transaction> open(std::uint64_t sequence, index_time_t time) = 0;

  // The next transaction after the last one returned, or nullopt when caught up (then call again
  // later: the same iterator continues). Re-opens only after a WAL switch, checked for
  // continuity (protocol.md §3.4). log_corrupt, log_retention or io_error as §3.6 maps them.
  virtual result<std::optional<wal_transaction>> next() = 0;

  // GetLatestSequenceNumber() of the store.
  virtual result<std::uint64_t> latest_sequence() const = 0;

  // §13.2 figures, with the anchor at `anchor_sequence` (0: the oldest retained file).
  virtual result<wal_retention> retention(std::uint64_t anchor_sequence,
                                          std::uint64_t wall_now_ns) const = 0;

  // Re-opens after WAL switches since the source was created (cumulative); metric `log_reopens`.
  virtual std::uint64_t reopens() const noexcept = 0;

  // Drops what reading holds (an open WAL file), leaving the source closed: open() again before
  // next(). For a reader that reads elsewhere for a while (core/commit_tail.hpp).
  virtual void release() noexcept {}
};

}  // namespace dix
