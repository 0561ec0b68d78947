// The log-source port over RocksDB's own WAL (protocol.md §3): GetUpdatesSince with exact
// resume, one iterator kept open and pulled with Next() after it went invalid (pinned on RocksDB
// 7.8.3 by an adapter test) — only while LastSequence is beyond the last batch read, so it never
// steps into a batch being written (decision 0026) — re-open at last + 1 only after a WAL
// switch (TryAgain), every batch
// validated (formats.md §1.3) and checked for continuity (core/wal_continuity). RocksDB's own
// empty recovery batches are stepped over (decision 0005).
//
// Thread safety: one thread at a time per source (the tailer's). Safe against a concurrent
// primary_store::close(): the iterator is dropped before RocksDB closes and later calls fail
// io_error (a transient fault for the runtime).
#pragma once

#include <memory>

#include <rocksdb/transaction_log.h>

#include "adapters/primary_store_impl.hpp"
#include "core/wal_continuity.hpp"
#include "ports/log_source.hpp"

namespace dix {

class rocksdb_log_source final : public log_source {
 public:
  explicit rocksdb_log_source(std::shared_ptr<primary_store> store);
  ~rocksdb_log_source() override;
  rocksdb_log_source(const rocksdb_log_source&) = delete;
  rocksdb_log_source& operator=(const rocksdb_log_source&) = delete;

  const std::string& log_name() const noexcept override { return store_->log_name(); }
  const std::string& identity() const noexcept override { return store_->identity(); }
  result<wal_transaction> open(std::uint64_t sequence, index_time_t time) override;
  // open() without the exact-anchor expectation: the first batch RocksDB returns for `sequence`
  // (the transaction holding it, or a later one), for wal_reader::seek_at_or_before.
  result<wal_transaction> open_unchecked(std::uint64_t sequence);
  result<std::optional<wal_transaction>> next() override;
  result<std::uint64_t> latest_sequence() const override;
  result<wal_retention> retention(std::uint64_t anchor_sequence,
                                  std::uint64_t wall_now_ns) const override;
  std::uint64_t reopens() const noexcept override { return reopens_; }
  void release() noexcept override;

 private:
  // next() without the lock and the reset on error.
  result<std::optional<wal_transaction>> pull();
  // Reads, validates and continuity-checks the batch under the iterator, first stepping over
  // RocksDB's recovery markers (core/wal_batch is_recovery_marker); nullopt when the iterator is
  // not valid (any more). Caller holds lifecycle.
  result<std::optional<wal_transaction>> read_current();
  // `e`, or log_corrupt in its place when `e` is the log_retention of a batch found above the
  // exact sequence expected while the retained WAL still reaches back to that sequence: a purge
  // removes the oldest files whole, so what skipped the sequence is a damaged (or deleted) WAL
  // record. Caller holds lifecycle.
  error gap_or_damage(error e, std::uint64_t found) const;
  // Opens an iterator at `sequence` that must be valid. Caller holds lifecycle.
  result<std::unique_ptr<rocksdb::TransactionLogIterator>> open_iterator(std::uint64_t sequence);
  result<wal_transaction> open_at(std::uint64_t sequence, index_time_t time, bool exact);

  std::shared_ptr<primary_store> store_;
  primary_store::impl& impl_;
  std::unique_ptr<rocksdb::TransactionLogIterator> iterator_;  // reset by close (lifecycle X)
  bool advance_ = false;  // the current batch was returned: Next() before reading again
  wal_continuity continuity_;
  family_map families_;
  raw_batch scratch_;
  std::uint64_t reopens_ = 0;
  std::uint64_t close_listener_ = 0;
};

}  // namespace dix
