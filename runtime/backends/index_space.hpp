// The free-space watermarks of one index backend (decision 0013): deliveries are deferred below
// the backend's reserve, batches already accepted wait before they are applied below half of it,
// and the database is not opened for writing below half of it — RocksDB writes at every open
// (LOG, MANIFEST, OPTIONS, a WAL) and Debian's build aborts on ENOSPC. What the database will
// still write for data it holds (a RocksDB index's unflushed memtables) counts as used.
// rocksdb_index_backend uses every level; the Xapian and hnsw backends defer their deliveries at
// the reserve, counting what a batch will make them write (issue 34). Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>

#include <dix/backend.hpp>
#include <dix/readiness.hpp>
#include <dix/result.hpp>

#include "core/free_space.hpp"

namespace dix {

// A backend option `free_space_reserve_bytes`: 0 (automatic) or [1 MiB, 1 TiB]; invalid_argument
// naming `option` otherwise.
result<void> check_reserve_option(const char* option, std::uint64_t bytes);

// What a backend last told its host of its free space (backend_host::note_hold): whether `to`
// for `epoch` is news — a change, or the epoch's first word, which clears what an earlier owner
// left. Caller synchronizes.
class space_hold {
 public:
  bool set(epoch_t epoch, backend_hold to) noexcept {
    const bool news = epoch_ != epoch || hold_ != to;
    epoch_ = epoch;
    hold_ = to;
    return news;
  }
  epoch_t epoch() const noexcept { return epoch_; }
  backend_hold hold() const noexcept { return hold_; }

 private:
  epoch_t epoch_ = 0;
  backend_hold hold_ = backend_hold::none;
};

class index_space {
 public:
  enum class level : std::uint8_t {
    deliver,  // the reserve
    apply,    // half of it (also the open)
  };

  // What counts as used beside the reading: what the backend reports (set_unflushed), or the
  // live WAL files of a RocksDB database in `dir` (live_wal_bytes), which its memtables' flush
  // will write at most.
  enum class pending : std::uint8_t { reported, live_wal };

  // `configured` is the backend's free_space_reserve_bytes (0 = automatic).
  index_space(std::filesystem::path dir, std::uint64_t configured, pending source = pending::reported);

  // Whether `bytes` more may be written at `level` now. A reading that fails admits: statvfs of
  // an existing directory does not fail, and RocksDB reports real trouble itself.
  bool admits(level at, std::uint64_t bytes);
  // Before DB::Open for writing: io_error naming the path, the free bytes and the floor.
  result<void> check_open();
  // What the database will still write for data it holds (pending::reported).
  void set_unflushed(std::uint64_t bytes);
  // Whether writing the unflushed data now would let the database out of a shortage it only
  // estimates (issue 34): at least 64 KiB of it, and the last reading shows room for all of it
  // above half the reserve. A deferred RocksDB index then flushes its memtables and looks again.
  bool flush_would_help();
  // How long the backend waits before it looks at the filesystem again while space is short.
  std::chrono::milliseconds poll_interval() const noexcept { return std::chrono::milliseconds(250); }
  // Tests: the reading (statvfs of the directory, or of its nearest existing parent before the
  // database exists) and how long one serves (100 ms).
  void set_probe(space_probe probe, std::chrono::milliseconds max_age);

 private:
  std::uint64_t floor(level at) const;  // caller holds mutex_
  bool refresh(std::uint64_t bytes, std::uint64_t floor);  // caller holds mutex_; false: no reading

  const std::filesystem::path dir_;
  const std::uint64_t configured_;
  const pending source_;
  std::atomic<std::uint64_t> unflushed_{0};
  std::mutex mutex_;
  space_probe probe_;
  space_gate gate_{std::chrono::milliseconds(100)};
};

}  // namespace dix
