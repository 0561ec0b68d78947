// Internal: the state behind dix::primary_store and the hooks the runtime needs (api.md §3):
// commit listener, admission hook, WAL access for the log tailer, synced_sequence and SyncWAL
// (protocol.md §4.8), coverage capture and system commits under the commit mutex (formats.md
// §1.2). Not public API: the CLI and the benchmarks cannot see it (docs/architecture.md, layers).
// The few hooks the actors use are primary_store_hooks.hpp, which this file includes and which
// has no RocksDB in it: actors/ includes that one only (decision 0047).
//
// Locking: `lifecycle` (shared) guards `db` and the family handles against close(); every use of
// RocksDB holds it shared, close() and create_table() hold it exclusively. `commit_mutex` is
// taken after `lifecycle` and serialises every DB::Write, so one WriteBatch is one WAL record.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <dix/primary_store.hpp>
#include <dix/wal.hpp>

#include "adapters/free_space.hpp"
#include "adapters/primary_store_hooks.hpp"  // commit_event, commit listeners, gate_of, …
#include "adapters/write_gate.hpp"
#include "core/commit_tail.hpp"
#include "core/shared_reads.hpp"
#include "core/wal_batch.hpp"
#include "ports/store_reader.hpp"  // coverage_point

namespace dix {

inline constexpr const char* meta_family_name = "dix.meta";
inline constexpr std::uint32_t store_format_version = 1;
inline constexpr std::size_t max_record_id_bytes = 4096;

// A dix transaction's WriteBatch, built as operations arrive: the header is written first as a
// placeholder, each table value gets an 8-byte version placeholder, and stamp() fills in the
// header time (and every version) under the commit mutex. Patching in place avoids copying
// every payload a second time inside the mutex.
class batch_builder : public rocksdb::WriteBatch {
 public:
  batch_builder();
  // Table values: version placeholder + payload. Meta values: stored as given.
  void put_versioned(rocksdb::ColumnFamilyHandle* family, std::string_view key, std::string_view payload);
  void put_plain(rocksdb::ColumnFamilyHandle* family, std::string_view key, std::string_view value);
  void del(rocksdb::ColumnFamilyHandle* family, std::string_view key);
  void delete_range(rocksdb::ColumnFamilyHandle* family, std::string_view begin, std::string_view end);
  std::uint32_t ops() const noexcept { return ops_; }
  // Writes the header (flags, time, op count) and every value version = time.
  void stamp(std::uint8_t flags, index_time_t time);

 private:
  std::size_t header_offset_ = 0;
  std::vector<std::size_t> version_offsets_;
  std::uint32_t ops_ = 0;
};

// A system transaction's operation on dix.meta (formats.md §5).
struct meta_op {
  op_kind kind = op_kind::put;  // put or del
  std::string key;
  std::string value;
};

struct transaction::state {
  std::shared_ptr<primary_store> store;
  txn_flags flags = txn_flags::none;
  bool sync = false;
  bool committed = false;
  std::optional<dix::error> failed;  // the first invalid operation
  batch_builder batch;
  std::vector<std::uint32_t> tables;  // distinct tables written, for admission
  std::uint32_t cached_table = 0;     // the last table's handle, valid while the store is open
  rocksdb::ColumnFamilyHandle* cached_handle = nullptr;
};

struct primary_store::impl {
  std::filesystem::path path;
  store_options options;
  bool read_only = false;
  std::string identity;

  mutable std::shared_mutex lifecycle;
  bool open = false;  // guarded by lifecycle
  std::unique_ptr<rocksdb::DB> db;
  rocksdb::ColumnFamilyHandle* meta = nullptr;
  std::map<std::uint32_t, rocksdb::ColumnFamilyHandle*> tables;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;  // every handle, destroyed at close

  std::mutex commit_mutex;
  // Free space (decision 0013), guarded by commit_mutex: the reading (statvfs unless a test set
  // a probe) and the gate every write passes, a user commit at the reserve, a system one at half.
  space_probe probe = read_space;
  space_gate space{std::chrono::milliseconds(100)};
  std::atomic<std::uint64_t> synced_sequence{0};
  // One SyncWAL at a time: a caller that waited re-checks synced_sequence first (sync_wal).
  std::mutex sync_mutex;
  // The primary reads the tailers of this store share (core/shared_reads.hpp, decision 0061).
  // This store's state only: a store opened again has a new one.
  std::shared_ptr<shared_reads> reads = std::make_shared<shared_reads>();
  // The latest commits, decoded once here for the tailers at the log's end (core/commit_tail.hpp,
  // decision 0064); appended under commit_mutex, with the family map and scratch below. This
  // store's state only: reset at close, a store opened again has a new one.
  std::shared_ptr<commit_tail> tail = std::make_shared<commit_tail>(commit_tail_limits());
  family_map tail_families;  // guarded by commit_mutex
  raw_batch tail_scratch;    // guarded by commit_mutex
  // The WAL listing of protocol.md §13.2, sampled at most once per interval (sampled_retention).
  struct wal_sample;
  std::mutex wal_sample_mutex;
  std::shared_ptr<const wal_sample> last_wal_sample;
  std::atomic<std::uint64_t> wal_syncs{0};

  // Hooks. Copied out under hooks_mutex and called without it.
  std::mutex hooks_mutex;
  std::function<admission(std::uint32_t table)> admission_hook;  // set: it decides instead of `gate`
  std::atomic<bool> has_admission_hook{false};
  write_gate gate;  // the runtime's registrations (protocol.md §13.5); has its own lock
  std::map<std::uint64_t, std::function<void(const commit_event&)>> listeners;
  // A copy of `listeners`, replaced whole under hooks_mutex at every change (publish_listeners):
  // a commit loads it (std::atomic_load) and calls them without hooks_mutex or a copy of each.
  using listener_list = std::vector<std::function<void(const commit_event&)>>;
  std::shared_ptr<const listener_list> listener_copy = std::make_shared<const listener_list>();
  void publish_listeners();  // caller holds hooks_mutex
  std::map<std::uint64_t, std::function<void()>> close_listeners;  // called under lifecycle (X)
  std::uint64_t next_hook_id = 1;

  // Stamps and writes one WriteBatch under the commit mutex (the only DB::Write of a store).
  result<commit_info> write(std::uint8_t flags, batch_builder& batch, bool sync);
  // Same, caller already holds lifecycle (shared or exclusive).
  result<commit_info> write_locked(std::uint8_t flags, batch_builder& batch, bool sync);
  // Whether `bytes` more leave the floor of `flags` free (decision 0013); caller holds
  // commit_mutex. io_error naming the path, the free bytes and the floor when they do not.
  result<void> admit_space(std::uint8_t flags, std::uint64_t bytes);
  // Flushes the memtables when their unflushed WAL is what the reserve check counts against the
  // store and the filesystem has room for the flush above half of `floor`; true when it did.
  bool flush_for_space(std::uint64_t floor);
  void notify(const commit_event& e);
  // Appends the batch just written at `sequence` to `tail` (decoded as the WAL reader decodes it),
  // or resets the tail when it cannot be decoded. Caller holds commit_mutex; returns what the tail
  // dropped, to be freed after the mutex.
  std::vector<std::shared_ptr<const wal_transaction>> append_to_tail(const rocksdb::WriteBatch& batch,
                                                                     std::uint64_t sequence);
  // The tail's bounds: 1/16 of the process's memory budget, at most 16 MiB.
  static commit_tail::limits commit_tail_limits();
  // Writes `clock` (unless record_clock is false: a failed open must not write), drops the
  // close listeners' iterators, closes RocksDB. Idempotent.
  result<void> close(bool record_clock = true);
  family_map families() const;  // caller holds lifecycle
};

// Access to the internals of a primary_store, for the runtime's adapters only.
struct primary_store_access {
  static primary_store::impl& get(primary_store& s) noexcept { return *s.impl_; }
  static const primary_store::impl& get(const primary_store& s) noexcept { return *s.impl_; }
  static std::shared_ptr<primary_store> make(std::unique_ptr<primary_store::impl> p) {
    return std::shared_ptr<primary_store>(new primary_store(std::move(p)));
  }
};

// Opens an existing store for reading only (RocksDB OpenForReadOnly): nothing is written, not
// even `clock`, and commits fail. Used by `dix wal` to inspect a store safely.
result<std::shared_ptr<primary_store>> open_read_only(const std::filesystem::path& path,
                                                      const std::string& log_name);

// System transaction (flag system, sync) on dix.meta, under the commit mutex.
result<commit_info> commit_system(primary_store& s, const std::vector<meta_op>& ops);
result<std::optional<std::string>> read_meta(const primary_store& s, std::string_view key);

// Called under the exclusive lifecycle lock just before RocksDB closes; drop iterators there.
std::uint64_t add_close_listener(primary_store& s, std::function<void()> fn);
void remove_close_listener(primary_store& s, std::uint64_t id);
// Tests: a hook that decides the writer gate's admission instead of gate_of(s)
// (primary_store_hooks.hpp).
void set_admission_hook(primary_store& s, std::function<admission(std::uint32_t)> hook);

// One WAL file as GetSortedWalFiles lists it (protocol.md §13.2).
struct wal_file_info {
  std::uint64_t start_sequence = 0, size = 0;
  bool archived = false;
  std::string path;  // the file, for its mtime
};
// Lists the WAL files; the caller holds `lifecycle` shared and the store is open. io_error.
result<std::vector<wal_file_info>> list_wal_files(const primary_store::impl& p);
// The §13.2 figures from a listing, with the anchor at `anchor_sequence` (0: the oldest file):
// the archive age is now − the holder's mtime (one stat).
wal_retention retention_of(const std::vector<wal_file_info>& files, const store_options& o,
                           std::uint64_t anchor_sequence, std::uint64_t wall_now_ns);
// sampled_retention: adapters/wal_sample.hpp.

std::uint64_t synced_sequence(const primary_store& s) noexcept;
// Unless synced_sequence already reaches `covering` (checked again once this caller has the
// store's sync mutex: a sync that ended meanwhile may have covered it), reads the latest
// sequence, calls DB::SyncWAL() and raises synced_sequence to it (§4.8); returns
// synced_sequence. io_error when the sync fails (a transient fault for the runtime).
struct wal_sync {
  std::uint64_t synced = 0;  // synced_sequence after the call
  bool called = false;       // this call synced (false: already covered)
};
result<wal_sync> sync_wal(primary_store& s, std::uint64_t covering);
// The coverage capture (protocol.md §12.1): the latest sequence and a fresh index time, both
// under the commit mutex. io_error when the store is closed.
result<coverage_point> capture_coverage_point(primary_store& s);

// Tests: replaces the free-space reading (statvfs) and how long one serves (100 ms).
void set_space_probe(primary_store& s, space_probe probe, std::chrono::milliseconds max_age);

}  // namespace dix
