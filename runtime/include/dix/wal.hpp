// Reading a primary store's WAL the way dix's log tailer reads it (protocol.md §3), for tools and
// diagnostics (`dix wal`, `dix bench wal`): exact resume at a sequence, every batch decoded and
// validated (formats.md §1.3) and checked for continuity, the WAL retention figures of
// protocol.md §13.2. A wal_reader opens the store read-only: nothing is written, not even `clock`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dix/result.hpp>

namespace dix {

// The flag bits of a transaction header (formats.md §1.3): txn_flags, plus `system`.
namespace header_flag {
inline constexpr std::uint8_t replicated = 1;  // applied from a canonical source; never gated
inline constexpr std::uint8_t recovery = 2;    // replay of recovered work; never gated
inline constexpr std::uint8_t system = 4;      // runtime metadata; only dix.meta operations
inline constexpr std::uint8_t reload = 8;      // table replaced wholesale; may DeleteRange
inline constexpr std::uint8_t all = 15;
}  // namespace header_flag

// "system|reload", or "none".
std::string flags_to_string(std::uint8_t flags);

enum class op_kind : std::uint8_t { put, del, delete_range };
std::string_view to_string(op_kind k) noexcept;

struct wal_op {
  op_kind kind = op_kind::put;
  bool meta = false;        // on dix.meta (table is then 0)
  std::uint32_t table = 0;  // table id, ≥ 1 unless meta
  std::string_view key;     // record id (delete_range: begin)
  std::string_view value;   // put: stored value (version + payload); delete_range: end
};

// One validated dix transaction (one WriteBatch). Its views stay valid while the object (or a
// copy of it) lives: `storage` owns the bytes.
struct wal_transaction {
  std::uint64_t sequence = 0;
  std::uint32_t count = 0;  // operations (= WriteBatch::Count())
  index_time_t time = 0;
  std::uint8_t flags = 0;  // header_flag bits
  std::uint64_t data_size = 0;
  std::vector<wal_op> ops;
  std::shared_ptr<const void> storage;  // keeps the bytes the views point into alive

  std::uint64_t end_sequence() const noexcept { return sequence + count - 1; }
  bool has_flag(std::uint8_t f) const noexcept { return (flags & f) != 0; }
};

// WAL retention figures of one log (protocol.md §13.2).
struct wal_retention {
  std::uint64_t wal_retained_bytes = 0;   // live + archived WAL files
  std::uint64_t wal_oldest_sequence = 0;  // first sequence of the oldest retained file; 0: none
  std::uint64_t wal_files = 0;
  std::uint64_t archived_bytes = 0;
  // wal_ttl − archive age (now − mtime) of the file holding the anchor; −1: live file or no TTL.
  std::int64_t retention_headroom_ms = -1;
  // size limit − archived bytes; −1: no size limit.
  std::int64_t retention_headroom_bytes = -1;
  // The recent WAL write rate: the bytes of every retained file after the oldest over the time
  // since the oldest was last written (its mtime); 0 while fewer than two files are retained. The
  // rebuild's retention fit (protocol.md §11.5) weighs it against retention_headroom_bytes.
  std::uint64_t wal_write_bytes_per_s = 0;
};

// STATES
//   positioned nowhere ──seek()──► reading ──next() = nullopt──► caught up ──next()──► reading …
//   Any error leaves the reader positioned nowhere; seek() again.
//
// Thread safety: one thread at a time. Blocking: open (RocksDB's read-only open replays the live
// WAL into memory), seek and next (file reads).
class wal_reader {
 public:
  // Opens the primary store at `path` read-only (RocksDB OpenForReadOnly; the store may be open
  // in another process) to read its log, named `log_name`. Fails invalid_argument (log name),
  // store_format_mismatch (not a dix primary store, or another format), log_corrupt (a WAL
  // damaged anywhere but in its incomplete last record: nothing is replayed past the damage
  // without a word; the message says where replay stops), io_error (no store at `path`, RocksDB).
  static result<std::unique_ptr<wal_reader>> open(const std::filesystem::path& path,
                                                  const std::string& log_name);
  ~wal_reader();
  wal_reader(const wal_reader&) = delete;
  wal_reader& operator=(const wal_reader&) = delete;

  const std::string& log_name() const noexcept;
  const std::string& identity() const noexcept;  // RocksDB GetDbIdentity()

  // GetLatestSequenceNumber() of the store as it was opened.
  result<std::uint64_t> latest_sequence() const;
  // The §13.2 figures with the anchor at `anchor_sequence` (0: the oldest retained file); ages
  // are taken against the wall clock now.
  result<wal_retention> retention(std::uint64_t anchor_sequence) const;

  // Positions the reader at `sequence` and returns that transaction: it must exist, be the first
  // batch returned, have exactly that sequence and, when `time` ≠ 0, that header time — else
  // log_retention (protocol.md §3.2). A log read from its start is sought at (1, 0).
  // log_corrupt when the batch is invalid, or when a later batch comes first while the retained
  // WAL still reaches back to `sequence` (a damaged record RocksDB skipped: a purge removes the
  // oldest files whole); io_error when the store cannot be read.
  result<wal_transaction> seek(std::uint64_t sequence, index_time_t time = 0);
  // Positions the reader at the first batch RocksDB returns for `sequence` — the transaction
  // holding it when `sequence` lies inside one — without seek()'s anchor checks, and returns
  // it; the caller judges how it relates to `sequence`. For a tool that explains why seek()
  // refused (dix wal: a sequence that is not the start of a transaction). Fails as seek().
  result<wal_transaction> seek_at_or_before(std::uint64_t sequence);
  // The next transaction after the last one returned, or nullopt at the end of the log.
  // log_corrupt, log_retention (a gap) or io_error as protocol.md §3.6 maps them.
  result<std::optional<wal_transaction>> next();

  struct impl;

 private:
  explicit wal_reader(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace dix
