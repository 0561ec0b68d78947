// Free-space watermarks (decision 0013), the pure part: the reserve rules, and a gate that admits
// writes against a reserve from a cached reading of the filesystem. Who reads the filesystem
// (statvfs) and what a database will still write for data it holds (unflushed memtables, an
// uncommitted transaction) is the caller's business: the primary store (adapters) and each
// shipped backend (backends) drive a gate. Every gate of the process counts what all the others
// on the same filesystem will still write (issue 34: five writers each counting only their own
// filled a 20 MiB filesystem). Not public API.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include <dix/result.hpp>

namespace dix {

struct space_reading {
  std::uint64_t available_bytes = 0;  // what an unprivileged writer may still use (f_bavail)
  std::uint64_t capacity_bytes = 0;   // the filesystem's size (f_blocks)
  std::uint64_t filesystem = 0;       // which one (f_fsid): the writers that share it
};

// Reads the filesystem holding a path; io_error naming the path when the system refuses. The
// real one is statvfs; tests inject readings through the internal hooks.
using space_probe = std::function<result<space_reading>(const std::filesystem::path&)>;

inline constexpr std::uint64_t min_reserve_floor_bytes = 128ull << 20;  // 128 MiB
inline constexpr std::uint64_t max_automatic_reserve_bytes = 4ull << 30;  // 4 GiB

// The automatic reserve of a filesystem of `capacity_bytes`: 2 % of it, at least
// min(128 MiB, an eighth of it), at most 4 GiB.
std::uint64_t automatic_reserve_bytes(std::uint64_t capacity_bytes) noexcept;
// The primary store's reserve: `configured`, or the automatic one when it is 0.
std::uint64_t store_reserve_bytes(std::uint64_t configured, std::uint64_t capacity_bytes) noexcept;
// An index backend's reserve: `configured`, or half the automatic one when it is 0, so that an
// index on the store's filesystem can take in what the store accepted before it refused.
std::uint64_t index_reserve_bytes(std::uint64_t configured, std::uint64_t capacity_bytes) noexcept;

// "7.2 MiB (7549747 bytes)".
std::string describe_bytes(std::uint64_t bytes);
// The shape of every refusal: "<what>: <free> free on its filesystem, below <limit>".
std::string describe_shortage(const std::string& what, std::uint64_t free_bytes, const std::string& limit);

// The bytes of the live WAL files of the RocksDB database in `db` (`<db>/*.log`, not the
// archive): what is not flushed yet, and what a DB::Open of `db` would replay and flush — what the
// memtables' flush will write at most, counted as used (the primary store, the RocksDB index); 0
// when there are none or the directory cannot be listed (RocksDB reports that itself).
std::uint64_t live_wal_bytes(const std::filesystem::path& db);

// What every gate of this process will still write, per filesystem: each gate's own pending
// bytes as of its last reading. Thread-safe; a gate's share leaves with the gate.
class pending_ledger {
 public:
  struct share;
  // A new share, on no filesystem yet.
  static std::shared_ptr<share> join();
  // Stores `bytes` as the share's pending bytes on `filesystem`; returns the sum over every
  // share on that filesystem, this one included.
  static std::uint64_t set(share& s, std::uint64_t filesystem, std::uint64_t bytes);
};

// Admission against a floor (a reserve, or a fraction of one) from a cached reading. A reading
// is taken again when it is older than `max_age`, when the bytes charged since would use more
// than half of the room it showed above the floor, or within twice the floor — so near the floor
// every write reads again, and far from it a reading serves every write for `max_age`. What the
// gate counts as used beside the reading is its own pending bytes and every other gate's on the
// same filesystem (pending_ledger). Not thread-safe.
class space_gate {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  explicit space_gate(std::chrono::milliseconds max_age) : max_age_(max_age), share_(pending_ledger::join()) {}

  // Whether admitting `bytes` above `floor` at `now` needs a fresh reading first.
  bool due(time_point now, std::uint64_t bytes, std::uint64_t floor) const noexcept;
  // A fresh reading taken at `now`; `pending_bytes`: what the database will still write for data
  // it already holds, counted as used, with what the other gates on its filesystem will write.
  // Forgets what was charged.
  void record(const space_reading& reading, std::uint64_t pending_bytes, time_point now);
  // The gate's own pending bytes changed between readings (an uncommitted transaction grew, a
  // commit wrote it): every other gate on its filesystem counts the new figure at its next
  // reading. Before any reading: nothing to share yet.
  void update_pending(std::uint64_t pending_bytes);
  // Whether `bytes` more leave at least `floor` free.
  bool admits(std::uint64_t bytes, std::uint64_t floor) const noexcept;
  // A write of `bytes` that was admitted.
  void charge(std::uint64_t bytes) noexcept { charged_ += bytes; }
  // The reading's available bytes less its pending bytes and what was charged since (≥ 0).
  std::uint64_t free_bytes() const noexcept;
  std::uint64_t capacity_bytes() const noexcept { return reading_.capacity_bytes; }
  // The last reading's available bytes; this gate's own pending bytes recorded with it, and every
  // gate's on its filesystem (own included), which it counts as used.
  std::uint64_t available_bytes() const noexcept { return reading_.available_bytes; }
  std::uint64_t own_pending_bytes() const noexcept { return own_pending_; }
  std::uint64_t pending_bytes() const noexcept { return pending_; }
  std::chrono::milliseconds max_age() const noexcept { return max_age_; }
  void set_max_age(std::chrono::milliseconds max_age) noexcept { max_age_ = max_age; }

 private:
  std::chrono::milliseconds max_age_;
  bool read_ = false;
  space_reading reading_;
  std::uint64_t own_pending_ = 0;
  std::uint64_t pending_ = 0;
  std::uint64_t charged_ = 0;
  std::shared_ptr<pending_ledger::share> share_;
  time_point read_at_{};
};

}  // namespace dix
