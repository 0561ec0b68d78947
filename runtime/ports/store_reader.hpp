// Port: a primary store as the log tailer uses it besides its WAL — point reads of stored values
// (resolution, protocol.md §4.3), its latest sequence, the WAL sync before delivery (§4.8), and
// what a rebuild needs: the boundary commit, a snapshot to scan and the tables' size estimates
// (§11.5, §11.6). The RocksDB adapter is runtime/adapters/rocksdb_store_reader; tests use fakes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <dix/result.hpp>

namespace dix {

class shared_reads;

// One record of a rebuild scan: its id and its stored value (8-byte version + payload,
// unchecked). The views stay valid until the next call on the snapshot.
struct scan_entry {
  std::string_view id;
  std::string_view value;
};

// One RocksDB snapshot of a store, read one table at a time in ascending id order (§11.6). Only
// `table.<id>` families are read; deleted records never appear. Releases the snapshot when
// destroyed. io_error when the store is closed or unreadable.
class store_snapshot {
 public:
  virtual ~store_snapshot() = default;
  // Positions at the first record of `table` whose id is greater than `after` (all of them when
  // `after` is empty). A table the store does not have holds nothing.
  virtual result<void> seek(std::uint32_t table, std::string_view after) = 0;
  // The next record of the table sought, or nullopt at its end.
  virtual result<std::optional<scan_entry>> next() = 0;
  // The snapshot's sequence: it holds exactly the transactions whose sequences are ≤ it.
  virtual std::uint64_t sequence() const noexcept = 0;
  // Point reads at the snapshot, as store_reader::read_many reads the latest state (issue 31's
  // verify fence resolves at it); independent of the scan's position.
  virtual result<std::vector<std::optional<std::string>>> read_many(std::uint32_t table,
                                                                    const std::vector<std::string_view>& ids) = 0;
};

// RocksDB's estimates for one table family (rocksdb.estimate-num-keys and
// rocksdb.estimate-live-data-size): approximate, for progress and the retention fit only.
struct table_estimate {
  std::uint64_t keys = 0;
  std::uint64_t live_bytes = 0;
};

// protocol.md §12.1: a store's latest sequence and an index time drawn together under its commit
// mutex, so every transaction with header time ≤ `time` has a sequence ≤ `latest_sequence`.
struct coverage_point {
  std::uint64_t latest_sequence = 0;  // GetLatestSequenceNumber() under the commit mutex
  index_time_t time = 0;              // drawn under the same mutex: every earlier commit is ≤ latest
};

// The rebuild boundary of one log (§11.5): the system transaction that wrote boundary/<id>.
struct boundary_commit {
  std::uint64_t sequence = 0;
  index_time_t time = 0;
};

class store_reader {
 public:
  virtual ~store_reader() = default;
  // The stored value (8-byte version + payload, unchecked) or nullopt when absent. io_error when
  // the store is closed or unreadable (a transient fault for the runtime).
  virtual result<std::optional<std::string>> read(std::uint32_t table, std::string_view id) = 0;
  // The same for several ids of one table, in order (protocol.md §4.3 allows groups of ≤ 16).
  // Default: one read() each; the RocksDB adapter uses MultiGet.
  virtual result<std::vector<std::optional<std::string>>> read_many(std::uint32_t table,
                                                                    const std::vector<std::string_view>& ids) {
    std::vector<std::optional<std::string>> out;
    out.reserve(ids.size());
    for (auto id : ids) {
      auto one = read(table, id);
      if (!one) return one.error();
      out.push_back(std::move(*one));
    }
    return out;
  }
  virtual result<std::uint64_t> latest_sequence() = 0;
  // The coverage capture of this store (§12.1). io_error when the store is closed.
  virtual result<coverage_point> capture_coverage() = 0;
  // The highest sequence known durable in the WAL.
  virtual std::uint64_t synced_sequence() const noexcept = 0;
  // Makes the WAL durable at least up to `covering`, a latest sequence the caller read: when
  // synced_sequence() already reaches it — another caller's sync covered it, perhaps while this
  // one waited for that sync to end — returns false at once; else reads the latest sequence,
  // syncs the WAL, raises synced_sequence to it and returns true. One sync at a time per store,
  // so the tailers of several indexes on one store share their syncs (decision 0061).
  virtual result<bool> sync_wal(std::uint64_t covering) = 0;
  // The reads of this store that the tailers following it share (core/shared_reads.hpp), or
  // null when they do not share.
  virtual shared_reads* shared() noexcept { return nullptr; }

  // Commits the system transaction boundary/<id> = epoch (formats.md §5; sync, under the commit
  // mutex) and returns its sequence and header time.
  virtual result<boundary_commit> commit_boundary(std::string_view id, epoch_t epoch) = 0;
  // A snapshot taken now: every transaction committed before the call is in it.
  virtual result<std::unique_ptr<store_snapshot>> snapshot() = 0;
  // The estimates of `table` (zeros for a table the store does not have).
  virtual result<table_estimate> estimate(std::uint32_t table) = 0;
};

}  // namespace dix
