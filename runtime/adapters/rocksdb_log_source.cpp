#include "adapters/rocksdb_log_source.hpp"

#include <sys/stat.h>

#include "adapters/store_ports.hpp"
#include "adapters/write_batch_reader.hpp"
#include "core/commit_tail.hpp"

namespace dix {
namespace {

error closed(const primary_store::impl& p) {
  return {errc::io_error, "primary store " + p.path.string() + " is closed"};
}

// protocol.md §3.6 and §3.4: an IOError while the iterator moves to the next WAL file means the
// file was purged under it; any other failure after Next() returned means the log is unreadable.
error iterator_failure(const rocksdb::Status& s, std::uint64_t after) {
  if (s.IsIOError()) {
    return {errc::log_retention, "a WAL file after sequence " + std::to_string(after) +
                                     " disappeared while reading: " + s.ToString()};
  }
  return {errc::log_corrupt, "reading the WAL after sequence " + std::to_string(after) + ": " + s.ToString()};
}

}  // namespace

rocksdb_log_source::rocksdb_log_source(std::shared_ptr<primary_store> store)
    : store_(std::move(store)), impl_(primary_store_access::get(*store_)) {
  close_listener_ = add_close_listener(*store_, [this] { iterator_.reset(); });
}

rocksdb_log_source::~rocksdb_log_source() {
  {
    std::shared_lock lock(impl_.lifecycle);
    iterator_.reset();
  }
  remove_close_listener(*store_, close_listener_);
}

result<std::unique_ptr<rocksdb::TransactionLogIterator>> rocksdb_log_source::open_iterator(
    std::uint64_t sequence) {
  std::unique_ptr<rocksdb::TransactionLogIterator> it;
  auto s = impl_.db->GetUpdatesSince(sequence, &it);
  auto latest = impl_.db->GetLatestSequenceNumber();
  if (s.IsNotFound()) {
    return error{errc::log_retention, "sequence " + std::to_string(sequence) +
                                          " is not in the log (latest " + std::to_string(latest) + ")"};
  }
  if (s.IsTryAgain()) return error{errc::io_error, "the WAL switched while opening: " + s.ToString()};
  if (s.IsIOError()) {
    return error{errc::log_retention, "cannot open the WAL at sequence " + std::to_string(sequence) + ": " + s.ToString()};
  }
  if (!s.ok()) return error{errc::log_corrupt, "opening the WAL at sequence " + std::to_string(sequence) + ": " + s.ToString()};
  // Measured: a store whose every WAL file was deleted answers OK with an invalid iterator.
  if (!it->Valid()) {
    auto st = it->status();
    if (!st.ok() && !st.IsTryAgain()) return iterator_failure(st, sequence);
    return error{errc::log_retention, "no retained WAL batch at sequence " + std::to_string(sequence) +
                                          " (latest " + std::to_string(latest) + ")"};
  }
  return it;
}

result<wal_transaction> rocksdb_log_source::open(std::uint64_t sequence, index_time_t time) {
  return open_at(sequence, time, true);
}

result<wal_transaction> rocksdb_log_source::open_unchecked(std::uint64_t sequence) { return open_at(sequence, 0, false); }

result<wal_transaction> rocksdb_log_source::open_at(std::uint64_t sequence, index_time_t time, bool exact) {
  std::shared_lock lock(impl_.lifecycle);
  iterator_.reset();
  advance_ = false;
  continuity_ = wal_continuity{};
  if (!impl_.open) return closed(impl_);
  if (sequence == 0) return error{errc::invalid_argument, "log sequence 0 does not exist; the first is 1"};
  families_ = impl_.families();
  auto it = open_iterator(sequence);
  if (!it) return it.error();
  iterator_ = std::move(*it);
  if (exact) continuity_.expect_exact(sequence, time);
  auto first = read_current();
  if (!first || !*first) {
    auto status = iterator_->status();
    iterator_.reset();
    if (!first) return first.error();
    // Only recovery markers were there: a failure met while stepping over them, else nothing at
    // `sequence` yet.
    if (!status.ok() && !status.IsTryAgain()) return iterator_failure(status, sequence);
    return error{errc::log_retention, "no retained WAL batch at sequence " + std::to_string(sequence) +
                                          " (latest " + std::to_string(impl_.db->GetLatestSequenceNumber()) + ")"};
  }
  advance_ = true;
  return std::move(**first);
}

result<std::optional<wal_transaction>> rocksdb_log_source::read_current() {
  for (; iterator_->Valid(); iterator_->Next()) {
    auto batch = iterator_->GetBatch();
    std::shared_ptr<const rocksdb::WriteBatch> owned(std::move(batch.writeBatchPtr));
    if (auto ok = read_write_batch(*owned, batch.sequence, scratch_); !ok) return ok.error();
    if (is_recovery_marker(scratch_)) continue;  // no operation, no sequence: continuity holds
    if (has_unknown_family(scratch_, families_)) families_ = impl_.families();  // once per batch
    auto txn = decode_transaction(scratch_, families_);
    if (!txn) {
      // A wrong batch where an exact one was expected is a retention failure first.
      if (auto gap = continuity_.check_expected_sequence(batch.sequence); !gap) return gap_or_damage(gap.error(), batch.sequence);
      return txn.error();
    }
    if (auto ok = continuity_.check(txn->sequence, txn->count, txn->time); !ok) return gap_or_damage(ok.error(), txn->sequence);
    txn->storage = std::move(owned);
    return std::optional<wal_transaction>{std::move(*txn)};
  }
  return std::optional<wal_transaction>{};
}

error rocksdb_log_source::gap_or_damage(error e, std::uint64_t found) const {
  const auto expected = continuity_.expected_sequence();
  if (e.value() != errc::log_retention || expected == 0 || found <= expected) return e;
  if (expected > impl_.db->GetLatestSequenceNumber()) return e;
  rocksdb::VectorLogPtr files;
  if (!impl_.db->GetSortedWalFiles(files).ok()) return e;
  for (const auto& f : files) {
    if (f->StartSequence() == 0) continue;  // an empty file
    if (f->StartSequence() > expected) return e;  // purged: the oldest retained file starts later
    return {errc::log_corrupt, e.message() + "; the retained WAL starts at sequence " +
                                   std::to_string(f->StartSequence()) +
                                   ", so the record was not purged: the WAL is damaged there"};
  }
  return e;
}

result<std::optional<wal_transaction>> rocksdb_log_source::next() {
  std::shared_lock lock(impl_.lifecycle);
  auto pulled = pull();
  if (!pulled) iterator_.reset();  // an error closes the source: open() again to retry
  return pulled;
}

result<std::optional<wal_transaction>> rocksdb_log_source::pull() {
  if (!impl_.open) return closed(impl_);
  if (!iterator_) return error{errc::io_error, "log " + log_name() + " is not open (open() first)"};
  if (advance_) {
    // Step only onto a complete batch: LastSequence moves once a batch's WAL record is written
    // and flushed to the file. Stepping at the end instead races the writer — the reader meets
    // the batch half written while LastSequence moved on meanwhile, and RocksDB answers a
    // TryAgain that sticks to the iterator, whose re-open then scans the live WAL file from its
    // start (tens of ms once it holds ~10 MB; decision 0026).
    if (impl_.db->GetLatestSequenceNumber() <= continuity_.last_end()) return std::optional<wal_transaction>{};
    // On RocksDB 7.8.3 Next() on an iterator that reached the end continues with batches
    // appended to the live WAL since (pinned by an adapter test).
    iterator_->Next();
    advance_ = false;
  }
  auto txn = read_current();
  if (!txn) return txn.error();
  if (*txn) {
    advance_ = true;
    return txn;
  }
  auto s = iterator_->status();
  if (s.ok()) {
    advance_ = true;
    return std::optional<wal_transaction>{};
  }
  if (!s.IsTryAgain()) return iterator_failure(s, continuity_.last_end());
  // Re-open at last + 1 rather than resume: after a WAL switch the iterator answers TryAgain,
  // and a re-open is the one place a silent skip can happen, so continuity is checked here.
  auto last = continuity_.last_end();
  if (impl_.db->GetLatestSequenceNumber() <= last) return std::optional<wal_transaction>{};
  auto it = open_iterator(last + 1);
  if (!it) {
    if (it.error().value() == errc::io_error) return std::optional<wal_transaction>{};  // TryAgain: next pull
    return it.error();
  }
  iterator_ = std::move(*it);
  ++reopens_;
  continuity_.expect_exact(last + 1, 0);
  auto reread = read_current();
  if (!reread) return reread.error();
  advance_ = reread->has_value();  // else only a recovery marker: the next pull asks status()
  return reread;
}

void rocksdb_log_source::release() noexcept {
  std::shared_lock lock(impl_.lifecycle);
  iterator_.reset();  // next() answers "not open" until open()
  advance_ = false;
}

result<std::uint64_t> rocksdb_log_source::latest_sequence() const {
  std::shared_lock lock(impl_.lifecycle);
  if (!impl_.open) return closed(impl_);
  return impl_.db->GetLatestSequenceNumber();
}

result<wal_retention> rocksdb_log_source::retention(std::uint64_t anchor_sequence,
                                                    std::uint64_t wall_now_ns) const {
  std::shared_lock lock(impl_.lifecycle);
  if (!impl_.open) return closed(impl_);
  auto files = list_wal_files(impl_);
  if (!files) return files.error();
  return retention_of(*files, impl_.options, anchor_sequence, wall_now_ns);
}

std::shared_ptr<log_source> make_rocksdb_log_source(std::shared_ptr<primary_store> store) {
  auto tail = primary_store_access::get(*store).tail;
  return std::make_shared<tail_log_source>(std::make_unique<rocksdb_log_source>(std::move(store)), std::move(tail));
}

}  // namespace dix
