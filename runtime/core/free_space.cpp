#include "core/free_space.hpp"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <vector>

namespace dix {

std::uint64_t automatic_reserve_bytes(std::uint64_t capacity_bytes) noexcept {
  const auto floor = std::min(min_reserve_floor_bytes, capacity_bytes / 8);
  return std::min(max_automatic_reserve_bytes, std::max(floor, capacity_bytes / 50));
}

std::uint64_t store_reserve_bytes(std::uint64_t configured, std::uint64_t capacity_bytes) noexcept {
  return configured != 0 ? configured : automatic_reserve_bytes(capacity_bytes);
}

std::uint64_t index_reserve_bytes(std::uint64_t configured, std::uint64_t capacity_bytes) noexcept {
  return configured != 0 ? configured : automatic_reserve_bytes(capacity_bytes) / 2;
}

std::string describe_bytes(std::uint64_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "%.1f MiB (%llu bytes)", static_cast<double>(bytes) / (1 << 20),
                static_cast<unsigned long long>(bytes));
  return text;
}

std::string describe_shortage(const std::string& what, std::uint64_t free_bytes, const std::string& limit) {
  return what + ": " + describe_bytes(free_bytes) + " free on its filesystem, below " + limit;
}

bool space_gate::due(time_point now, std::uint64_t bytes, std::uint64_t floor) const noexcept {
  if (!read_ || now - read_at_ >= max_age_) return true;
  const auto free_then = reading_.available_bytes > pending_ ? reading_.available_bytes - pending_ : 0;
  const auto room = free_then > floor ? free_then - floor : 0;
  // Within twice the floor every write reads again: other writers share the filesystem (the
  // store, each index, RocksDB's own flushes and compactions) and a reading taken before their
  // writes would let this one take room that is gone (issue 34: a 20 MiB filesystem filled).
  return room < floor || charged_ + bytes > room / 2;
}

struct pending_ledger::share {
  std::uint64_t filesystem = 0;
  std::uint64_t bytes = 0;
};

namespace {
std::mutex ledger_mutex;
std::vector<std::weak_ptr<pending_ledger::share>>& ledger_shares() {
  static std::vector<std::weak_ptr<pending_ledger::share>> shares;
  return shares;
}
}  // namespace

std::shared_ptr<pending_ledger::share> pending_ledger::join() {
  auto s = std::make_shared<share>();
  std::lock_guard g(ledger_mutex);
  auto& shares = ledger_shares();
  shares.erase(std::remove_if(shares.begin(), shares.end(), [](const auto& w) { return w.expired(); }), shares.end());
  shares.push_back(s);
  return s;
}

std::uint64_t pending_ledger::set(share& s, std::uint64_t filesystem, std::uint64_t bytes) {
  std::lock_guard g(ledger_mutex);
  s.filesystem = filesystem;
  s.bytes = bytes;
  std::uint64_t total = 0;
  for (const auto& w : ledger_shares()) {
    if (auto other = w.lock(); other && other->filesystem == filesystem) total += other->bytes;
  }
  return total;
}

void space_gate::record(const space_reading& reading, std::uint64_t pending_bytes, time_point now) {
  read_ = true;
  reading_ = reading;
  own_pending_ = pending_bytes;
  pending_ = pending_ledger::set(*share_, reading.filesystem, pending_bytes);
  charged_ = 0;
  read_at_ = now;
}

void space_gate::update_pending(std::uint64_t pending_bytes) {
  if (!read_) return;
  own_pending_ = pending_bytes;
  pending_ = pending_ledger::set(*share_, reading_.filesystem, pending_bytes);
}

std::uint64_t space_gate::free_bytes() const noexcept {
  const auto used = pending_ + charged_;
  return reading_.available_bytes > used ? reading_.available_bytes - used : 0;
}

bool space_gate::admits(std::uint64_t bytes, std::uint64_t floor) const noexcept {
  const auto free = free_bytes();
  return free >= floor && free - floor >= bytes;
}

std::uint64_t live_wal_bytes(const std::filesystem::path& db) {
  std::uint64_t total = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(db, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".log") continue;
    std::error_code size_ec;
    const auto size = it->file_size(size_ec);
    if (!size_ec) total += size;
  }
  return total;
}

}  // namespace dix
