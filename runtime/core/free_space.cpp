#include "core/free_space.hpp"

#include <algorithm>
#include <cstdio>

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
  return room == 0 || charged_ + bytes > room / 2;
}

void space_gate::record(const space_reading& reading, std::uint64_t pending_bytes, time_point now) noexcept {
  read_ = true;
  reading_ = reading;
  pending_ = pending_bytes;
  charged_ = 0;
  read_at_ = now;
}

std::uint64_t space_gate::free_bytes() const noexcept {
  const auto used = pending_ + charged_;
  return reading_.available_bytes > used ? reading_.available_bytes - used : 0;
}

bool space_gate::admits(std::uint64_t bytes, std::uint64_t floor) const noexcept {
  const auto free = free_bytes();
  return free >= floor && free - floor >= bytes;
}

}  // namespace dix
