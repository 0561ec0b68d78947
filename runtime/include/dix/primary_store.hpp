// primary_store: a RocksDB database whose own write-ahead log is dix's record of change
// (formats.md §1, §2, §5). Every write is one transaction = one WriteBatch whose first record is
// the 24-byte dix header; values are stored as an 8-byte version (the header time) + payload.
//
// Thread safety: every member is thread-safe. Commits are serialised by a per-store commit mutex
// held from drawing the header time to the return of DB::Write, so header-time order equals
// sequence order and concurrent batches are never merged into one WAL record.
// Blocking: open, close, create_table, get, scan, commit (mutex, optional fsync).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dix/options.hpp>
#include <dix/result.hpp>

namespace dix {

enum class txn_flags : std::uint8_t { none = 0, replicated = 1, recovery = 2, reload = 8 };
constexpr txn_flags operator|(txn_flags a, txn_flags b) noexcept {
  return static_cast<txn_flags>(static_cast<std::uint8_t>(a) | static_cast<std::uint8_t>(b));
}
constexpr txn_flags operator&(txn_flags a, txn_flags b) noexcept {
  return static_cast<txn_flags>(static_cast<std::uint8_t>(a) & static_cast<std::uint8_t>(b));
}

struct commit_info {
  std::uint64_t sequence = 0;  // first sequence of the batch; 0: empty, nothing written
  index_time_t time = 0;       // header time; a valid `since` for coverage
};

struct record {
  std::uint64_t version = 0;  // header time of the transaction that wrote the value
  std::string payload;
};

enum class admit_kind : std::uint8_t { open, delay, reject };
struct admission {
  admit_kind kind = admit_kind::open;
  std::chrono::microseconds delay{0};
  std::string backend_id;  // the gate that decided, when not open
};

class transaction;

// Progress of primary_store::open_standby, reported from the calling thread: `waiting` before
// each blocking wait for the store, `granted` when one returns (before DB::Open). Either may be
// empty. For messages and timing; they must not touch the store's files.
struct standby_events {
  std::function<void()> waiting;
  std::function<void()> granted;
};

class primary_store : public std::enable_shared_from_this<primary_store> {
 public:
  // Opens (or creates) the store with the RocksDB settings formats.md §1.1 requires, checks the
  // `format` record (store_format_mismatch) and raises the process-wide index-time floor from
  // the `clock` record and the newest WAL header. invalid_argument for bad options; log_corrupt
  // when the WAL is damaged anywhere but in an incomplete last record (a crash's unsynced tail,
  // which is dropped): the store is not opened, nothing is dropped or written, and the message
  // names the store and the sequences before and after the damage (decision 0034); io_error when
  // RocksDB fails, including a path already open in this process or held by another one (the
  // message names the path and says which). With create_if_missing a store is made only in a
  // new path whose parent directory exists (that one directory is created, not writable by group
  // or others) or in an empty directory; a directory that holds other files but no CURRENT is
  // refused store_format_mismatch, a missing parent io_error, nothing written (decision 0035).
  static result<std::shared_ptr<primary_store>> open(const std::filesystem::path& path,
                                                     const store_options& options);
  // The standby (protocol.md §9.8): open() for a process that waits to take the store over.
  // While another process holds it, blocks in fcntl(F_SETLKW) for a write lock on `<path>/LOCK`
  // — no polling: the kernel grants it when that process is gone and RocksDB's lock with it —,
  // closes that descriptor BEFORE DB::Open (RocksDB's lock is a POSIX record lock owned by the
  // process: closing any descriptor of LOCK after the open would silently drop it), then opens
  // as open() does, WAL recovery included. If the open then fails on the lock (another standby
  // won), it waits again. A store no process holds, or one that does not exist yet, opens at once.
  // Rules for the calling process: it MUST NOT otherwise open, lock or close `<path>/LOCK`, and
  // must not open the same path by other means while this call runs. Calls for one path are
  // serialised in the process; a store this process already has open fails at once (io_error,
  // "already open in this process") without LOCK being opened.
  // Cancellation: none in-process — the call returns only with the store or an error. To stop a
  // waiting standby, end its process (SIGTERM, SIGKILL); the probe ends with it.
  // Errors: as open(), plus io_error when the wait itself fails (e.g. EDEADLK).
  static result<std::shared_ptr<primary_store>> open_standby(const std::filesystem::path& path,
                                                             const store_options& options,
                                                             const standby_events& events = {});
  ~primary_store();  // closes if still open (writing `clock`, errors ignored)

  primary_store(const primary_store&) = delete;
  primary_store& operator=(const primary_store&) = delete;

  // Creates column family table.<id>. Idempotent. invalid_argument for id 0.
  result<void> create_table(std::uint32_t table);
  bool has_table(std::uint32_t table) const;

  transaction begin(txn_flags flags = txn_flags::none);

  // record_corrupt when the stored value is shorter than 8 bytes or has version 0.
  result<std::optional<record>> get(std::uint32_t table, std::string_view id) const;
  // Key order from `from`; fn returns false to stop.
  result<void> scan(std::uint32_t table, std::string_view from,
                    const std::function<bool(std::string_view id, const record&)>& fn) const;

  // The process-wide index-time counter: strictly greater than every earlier call and header time.
  index_time_t index_time();
  // Writer-gate check without waiting and without waking anyone (protocol.md §13.5): the largest
  // lag_gate of the registered indexes projecting `table` — open, a delay in µs, or reject
  // (naming the index). Open for a table no registration of any runtime projects.
  admission admit(std::uint32_t table) const;

  const std::string& log_name() const noexcept;
  const std::string& identity() const noexcept;  // RocksDB GetDbIdentity()
  const std::filesystem::path& path() const noexcept;

  // Writes `clock` (sync) and closes RocksDB. Idempotent; later calls on the store fail io_error.
  result<void> close();

  struct impl;  // runtime/adapters/primary_store_impl.hpp; the runtime's hooks live there

 private:
  friend class transaction;
  friend struct primary_store_access;
  explicit primary_store(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

// The free space of a store's filesystem as its commits see it (decision 0013), readable by any
// process without opening the store (`dix status`): what statvfs says is available, and the
// bytes of the live WAL, which the memtables' flush will write again and which the store counts
// as used. io_error naming the path when statvfs fails.
struct store_space {
  std::uint64_t available_bytes = 0;  // f_bavail × f_frsize
  std::uint64_t capacity_bytes = 0;   // f_blocks × f_frsize
  std::uint64_t unflushed_bytes = 0;  // live WAL files (`<store>/*.log`)
};
result<store_space> read_store_space(const std::filesystem::path& store);

// The last sequence of the newest committed transaction (RocksDB GetLatestSequenceNumber; each
// operation takes one sequence). 0 for a store that is empty or closed. Thread-safe; waits only
// while the store is closing.
std::uint64_t latest_sequence(const primary_store& store);

// A unit of writes. Move-only; destroyed uncommitted = discarded. Not thread-safe itself.
// Operations are validated as they are added and encoded straight into the WriteBatch; the
// first invalid one makes commit() fail with invalid_argument (io_error for a closed store)
// and nothing is written.
class transaction {
 public:
  transaction(transaction&&) noexcept;
  transaction& operator=(transaction&&) noexcept;
  ~transaction();

  void put(std::uint32_t table, std::string_view id, std::string_view payload);
  void del(std::uint32_t table, std::string_view id);
  // Removes [begin, end) of a table; only in a transaction flagged reload.
  void delete_range(std::uint32_t table, std::string_view begin, std::string_view end);
  void set_sync(bool sync);  // Default: the store's sync_commits
  std::size_t size() const noexcept;  // operations so far

  // Validates, asks admission (unless replicated/recovery), then writes one WriteBatch under the
  // commit mutex. An empty transaction writes nothing and returns {0, 0}. A transaction commits
  // at most once; later calls fail invalid_argument. Admission (protocol.md §13.5, the writer
  // gate of indexes with max_lag > 0): an index that lags B or more refuses with index_lagging
  // (retryable after a pause; nothing is written) and wakes its runners; a throttled one makes
  // this thread wait up to max_write_delay before taking the commit mutex, then commits.
  result<commit_info> commit();

  struct state;  // runtime/adapters/primary_store_impl.hpp

 private:
  friend class primary_store;
  explicit transaction(std::unique_ptr<state> s);
  std::unique_ptr<state> state_;
};

}  // namespace dix
