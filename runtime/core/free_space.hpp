// Free-space watermarks (decision 0013), the pure part: the reserve rules, and a gate that admits
// writes against a reserve from a cached reading of the filesystem. Who reads the filesystem
// (statvfs) and what a database will still write for data it holds (unflushed memtables) is the
// caller's business: the primary store (adapters) and rocksdb_index_backend (backends) each
// drive a gate. Not public API.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include <dix/result.hpp>

namespace dix {

struct space_reading {
  std::uint64_t available_bytes = 0;  // what an unprivileged writer may still use (f_bavail)
  std::uint64_t capacity_bytes = 0;   // the filesystem's size (f_blocks)
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

// Admission against a floor (a reserve, or a fraction of one) from a cached reading. A reading
// is taken again when it is older than `max_age`, or when the bytes charged since would use more
// than half of the room it showed above the floor — so near the floor every write reads again,
// and far from it a reading serves every write for `max_age`. Not thread-safe.
class space_gate {
 public:
  using time_point = std::chrono::steady_clock::time_point;

  explicit space_gate(std::chrono::milliseconds max_age) noexcept : max_age_(max_age) {}

  // Whether admitting `bytes` above `floor` at `now` needs a fresh reading first.
  bool due(time_point now, std::uint64_t bytes, std::uint64_t floor) const noexcept;
  // A fresh reading taken at `now`; `pending_bytes`: what the database will still write for data
  // it already holds, counted as used. Forgets what was charged.
  void record(const space_reading& reading, std::uint64_t pending_bytes, time_point now) noexcept;
  // Whether `bytes` more leave at least `floor` free.
  bool admits(std::uint64_t bytes, std::uint64_t floor) const noexcept;
  // A write of `bytes` that was admitted.
  void charge(std::uint64_t bytes) noexcept { charged_ += bytes; }
  // The reading's available bytes less its pending bytes and what was charged since (≥ 0).
  std::uint64_t free_bytes() const noexcept;
  std::uint64_t capacity_bytes() const noexcept { return reading_.capacity_bytes; }
  std::chrono::milliseconds max_age() const noexcept { return max_age_; }
  void set_max_age(std::chrono::milliseconds max_age) noexcept { max_age_ = max_age; }

 private:
  std::chrono::milliseconds max_age_;
  bool read_ = false;
  space_reading reading_;
  std::uint64_t pending_ = 0;
  std::uint64_t charged_ = 0;
  time_point read_at_{};
};

}  // namespace dix
