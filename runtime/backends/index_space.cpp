#include "backends/index_space.hpp"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

namespace dix {
namespace {

// statvfs of `dir`, or of its nearest existing parent: the database directory exists only after
// the first open, and it will live on its parent's filesystem.
result<space_reading> read_nearest(const std::filesystem::path& dir) {
  auto path = dir;
  for (;;) {
    struct statvfs st {};
    if (::statvfs(path.c_str(), &st) == 0) {
      return space_reading{static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize,
                           static_cast<std::uint64_t>(st.f_blocks) * st.f_frsize, static_cast<std::uint64_t>(st.f_fsid)};
    }
    const int err = errno;
    if (err != ENOENT || !path.has_relative_path()) {
      return error{errc::io_error, "cannot read the free space of " + path.string() + ": " + std::strerror(err)};
    }
    path = path.parent_path();
  }
}

}  // namespace

result<void> check_reserve_option(const char* option, std::uint64_t bytes) {
  if (bytes != 0 && (bytes < (1u << 20) || bytes > (1ull << 40))) {
    return {errc::invalid_argument,
            std::string(option) + " = " + std::to_string(bytes) + ": must be 0 or in [1048576, 1099511627776]"};
  }
  return {};
}

index_space::index_space(std::filesystem::path dir, std::uint64_t configured, pending source)
    : dir_(std::move(dir)), configured_(configured), source_(source), probe_(read_nearest) {}

std::uint64_t index_space::floor(level at) const {
  const auto reserve = index_reserve_bytes(configured_, gate_.capacity_bytes());
  return at == level::deliver ? reserve : reserve / 2;
}

bool index_space::refresh(std::uint64_t bytes, std::uint64_t floor) {
  const auto now = std::chrono::steady_clock::now();
  if (!gate_.due(now, bytes, floor)) return true;
  auto reading = probe_(dir_);
  if (!reading) return false;
  gate_.record(*reading, source_ == pending::live_wal ? live_wal_bytes(dir_) : unflushed_.load(std::memory_order_relaxed), now);
  return true;
}

void index_space::set_unflushed(std::uint64_t bytes) {
  unflushed_.store(bytes, std::memory_order_relaxed);
  std::lock_guard guard(mutex_);
  gate_.update_pending(bytes);  // the other writers on this filesystem count it from now on
}

bool index_space::flush_would_help() {
  std::lock_guard guard(mutex_);
  // The flush writes at most the live WAL's data (deduplicated, compressed: usually far less),
  // and the WAL is deleted after it. The reading may be 100 ms old and other writers share the
  // filesystem: the flush runs only with all of it fitting above half the reserve.
  const auto waiting = gate_.own_pending_bytes();
  return waiting >= (64u << 10) && gate_.available_bytes() >= gate_.pending_bytes() + floor(level::apply);
}

bool index_space::admits(level at, std::uint64_t bytes) {
  std::lock_guard guard(mutex_);
  if (!refresh(bytes, floor(at))) return true;
  if (!gate_.admits(bytes, floor(at))) return false;
  gate_.charge(bytes);
  return true;
}

result<void> index_space::check_open() {
  std::lock_guard guard(mutex_);
  if (!refresh(0, floor(level::apply)) || gate_.admits(0, floor(level::apply))) return {};
  return error{errc::io_error, describe_shortage("index database " + dir_.string(), gate_.free_bytes(),
                                                 "half its free-space reserve, " + describe_bytes(floor(level::apply))) +
                                   " (rocksdb_index_options.free_space_reserve_bytes); not opened for writing, retry once "
                                   "space is freed"};
}

void index_space::set_probe(space_probe probe, std::chrono::milliseconds max_age) {
  std::lock_guard guard(mutex_);
  probe_ = std::move(probe);
  gate_ = space_gate(max_age);
}

}  // namespace dix
