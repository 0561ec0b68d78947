// The free-space watermarks of one rocksdb_index_backend (decision 0013): deliveries are deferred
// below the backend's reserve, batches already accepted wait before they are applied below half
// of it, and the database is not opened for writing below half of it — RocksDB writes at every
// open (LOG, MANIFEST, OPTIONS, a WAL) and Debian's build aborts on ENOSPC. The database's
// unflushed memtables count as used: their flush will write them. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>

#include "core/free_space.hpp"

namespace dix {

class index_space {
 public:
  enum class level : std::uint8_t {
    deliver,  // the reserve
    apply,    // half of it (also the open)
  };

  // `configured` is rocksdb_index_options::free_space_reserve_bytes (0 = automatic).
  index_space(std::filesystem::path dir, std::uint64_t configured);

  // Whether `bytes` more may be written at `level` now. A reading that fails admits: statvfs of
  // an existing directory does not fail, and RocksDB reports real trouble itself.
  bool admits(level at, std::uint64_t bytes);
  // Before DB::Open for writing: io_error naming the path, the free bytes and the floor.
  result<void> check_open();
  // The memtables' size as last seen (the applier updates it).
  void set_unflushed(std::uint64_t bytes) noexcept { unflushed_.store(bytes, std::memory_order_relaxed); }
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
  std::atomic<std::uint64_t> unflushed_{0};
  std::mutex mutex_;
  space_probe probe_;
  space_gate gate_{std::chrono::milliseconds(100)};
};

}  // namespace dix
