// rocksdb_index_backend: the default backend, a secondary index in its own RocksDB database
// (backends.md §1). A projection encodes a record's index keys with encode_keys(); the backend
// keeps `entries` (index key → record refs, in key order), `reverse` (record ref → its current
// keys and version) and `meta` (`cursor`; `coverage`, the last publish_coverage), writes each
// batch as one WriteBatch (entries and the batch's cursor together) and makes them durable with
// FlushWAL(true) at barriers.
//
// Threads: deliver/flush/shutdown/reset enqueue; one applier thread per instance applies the
// queue (never a CAF scheduler thread). Queries may run on any thread at any time.
// Crash contract: the on-disk cursor always describes exactly the entries stored with it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <dix/backend.hpp>
#include <dix/query.hpp>  // record_ref, query_result

namespace rocksdb {
struct DBOptions;
struct ColumnFamilyDescriptor;
}  // namespace rocksdb

namespace dix {

struct rocksdb_index_options {
  std::filesystem::path path;  // the index database, never a primary store. Default: none (required)
  std::uint64_t max_queued_bytes = 64u << 20;  // [1 KiB, 16 GiB]; deliveries are deferred above. Default: 64 MiB
  // Free space left on the filesystem of `path` (decision 0013), 0 = automatic: half the store's
  // automatic rule (1 % of the filesystem, at least min(64 MiB, a sixteenth), at most 2 GiB);
  // else [1 MiB, 1 TiB]. Below it (its live WAL counted as used: what the memtables' flush will
  // write at most; a deferred index flushes them itself) deliveries are deferred
  // and `changed` follows when space returns; below half of it accepted batches wait to be
  // applied and the database is not opened for writing. Default: 0
  std::uint64_t free_space_reserve_bytes = 0;
  // Keeps the index digest (formats.md §7) in every batch's write, which open_digest() reads and
  // dix verify needs. Off (only to measure its cost: `dix bench catchup --no-digest`), each batch
  // deletes the stored digest instead, so turning it on again recomputes it. Default: true
  bool digest = true;
};
result<void> validate(const rocksdb_index_options& options);

// The RocksDB options an index database is opened with, the process's memory budget
// (<dix/memory.hpp>) included, and its column families in order: default, entries, reverse,
// meta. For a program that writes such a database itself to compare with the backend (`dix
// bench catchup`'s tuned baseline); the families' key formats are the backend's own. Replaces
// both arguments' contents. Callers include <rocksdb/db.h> and <rocksdb/options.h>.
void rocksdb_index_open_options(rocksdb::DBOptions& db, std::vector<rocksdb::ColumnFamilyDescriptor>& families);

// The projection encoding: u32 count, then (u16 length, bytes) per key. Valid: 0…256 keys of
// 1…1024 bytes; the backend treats anything else as unindexable (`bad_encoding`,
// `key_too_long`, `too_many_keys`), never as a failure.
std::string encode_keys(const std::vector<std::string>& keys);
// The keys, or the unindexable code in the error message (errc::invalid_argument).
result<std::vector<std::string>> decode_keys(std::string_view bytes);

// What the last publish_coverage stored beside the cursor (meta key `coverage`: u64 epoch, u64
// coverage_time, u32 count, then per log u16 name length, name, u64 sequence; little-endian): the
// positions the runtime certified as covered at coverage_time, under epoch. Informational only
// (protocol.md §12.3): never read back by the runtime; a reset deletes it with the cursor.
struct rocksdb_index_coverage {
  epoch_t epoch = 0;
  index_time_t coverage_time = 0;
  dix::positions positions;
};

class rocksdb_index_backend final : public backend {
 public:
  // invalid_argument for bad options or id. The database is opened lazily (or by open()).
  static result<std::shared_ptr<rocksdb_index_backend>> create(std::string id, rocksdb_index_options options);
  ~rocksdb_index_backend() override;  // stops the applier; closes the database

  // Opens the index database now rather than at the first call that needs it (durable_cursor,
  // at acquisition). Optional, idempotent, thread-safe, allowed before attach. A standby granted
  // the home store calls it on a thread of its own, so the index's recovery overlaps the store's
  // (docs/operations.md, "standby"). io_error when RocksDB cannot open the database — also while
  // a dying owner's process still holds its lock; the open at acquisition then tries again.
  result<void> open();

  const std::string& id() const noexcept override;
  std::string_view kind() const noexcept override { return "rocksdb_index"; }
  void attach(backend_host& host) override;
  result<std::optional<cursor>> durable_cursor() override;  // cursor_invalid: stored bytes undecodable
  delivery_result deliver(std::shared_ptr<const batch> b) override;
  void flush(flush_reason reason, completion done) override;
  void shutdown(epoch_t epoch, completion done) override;
  subscription on_state_change(std::function<void(state_change)> callback) override;
  bool supports_reset() const noexcept override { return true; }
  void reset(epoch_t epoch, completion done) override;
  // Stores the positions beside the cursor (meta key `coverage`) when `epoch` is the owner's and
  // the database is open; unsynced, durable with the next barrier. Best effort, never throws.
  void publish_coverage(const positions& p, index_time_t coverage_time, epoch_t epoch) noexcept override;
  // The stored coverage record, if any (opens the database if needed). record_corrupt when the
  // bytes do not decode; io_error when the database cannot be read.
  result<std::optional<rocksdb_index_coverage>> stored_coverage();

  // Records whose current keys include `key`, in record-ref order; at most `limit` rows.
  result<query_result<std::vector<record_ref>>> lookup(std::string_view key, std::size_t limit,
                                                       const coverage_mode& mode = {});
  // Records with a key in [begin, end), in key order; at most `limit` rows.
  result<query_result<std::vector<record_ref>>> range(std::string_view begin, std::string_view end,
                                                      std::size_t limit, const coverage_mode& mode = {});
  // backend::query: lookup (q.text) and range ([q.text, q.end)), q.limit rows, score 0.
  result<query_rows> query(const index_query& q) override;
  // The digest (formats.md §7) at a snapshot of the database (opened if needed). The view holds
  // the database open: a shutdown or reset waits until it is destroyed.
  result<std::unique_ptr<digest_view>> open_digest() override;
  std::optional<std::string> skips(const record_entry& r) const override;

  struct impl;

 private:
  friend struct rocksdb_index_probe;  // runtime/backends/rocksdb_index_probe.hpp: what tests observe
  explicit rocksdb_index_backend(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

// The query-only handle of a rocksdb_index_backend's database (backends.md §0, decision 0028),
// for a process with no runtime: `host` is normally make_query_host(home_db, id)
// (<dix/query_host.hpp>). It opens options.path as a RocksDB secondary instance — never the
// writer's LOCK, never a byte written under options.path — whose private directory (its info log)
// is a fresh 0700 directory under the system temporary directory, removed by the destructor.
// Each query calls host->admit_query(mode) first, then brings its view up to the latest durable
// state (everything a FlushWAL(true) barrier made durable: the live WAL), then reads with the
// backend's own query code, and answers with the admitted coverage. Bringing the view up to date
// costs nothing while the owner's WAL and MANIFEST files are unchanged; new WAL bytes are read by
// TryCatchUpWithPrimary; a changed MANIFEST (a flush, a compaction, a reset), a reset seen
// through the meta record `resets`, or a database whose families were ever recreated (RocksDB
// 7.8's catch-up is unsafe there) open the instance again. Queries of one reader run one at a
// time. Thread-safe.
class rocksdb_index_reader {
 public:
  // invalid_argument for bad options or id; io_error when the database exists but cannot be
  // opened, or the private directory cannot be made. An index with no database yet answers no
  // rows (it is opened at the first query that finds one).
  static result<std::shared_ptr<rocksdb_index_reader>> open(std::string id, rocksdb_index_options options,
                                                            std::shared_ptr<backend_host> host);
  ~rocksdb_index_reader();
  rocksdb_index_reader(const rocksdb_index_reader&) = delete;
  rocksdb_index_reader& operator=(const rocksdb_index_reader&) = delete;

  const std::string& id() const noexcept;

  // As rocksdb_index_backend::lookup and range. Besides the admission's refusals: unavailable
  // while a reset has the families missing (retry), io_error when the database cannot be read.
  result<query_result<std::vector<record_ref>>> lookup(std::string_view key, std::size_t limit,
                                                       const coverage_mode& mode = {});
  result<query_result<std::vector<record_ref>>> range(std::string_view begin, std::string_view end,
                                                      std::size_t limit, const coverage_mode& mode = {});

  struct impl;

 private:
  explicit rocksdb_index_reader(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace dix
