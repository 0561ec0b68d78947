#include "core/key_table.hpp"

#include <algorithm>
#include <functional>

#include "core/assert.hpp"

namespace dix {

std::uint64_t key_table::hash_of(std::size_t log, std::uint32_t table, std::string_view id) noexcept {
  std::uint64_t h = std::hash<std::string_view>{}(id);
  h ^= ((static_cast<std::uint64_t>(table) << 8) ^ static_cast<std::uint64_t>(log)) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  return h;
}

void key_table::clear(std::size_t first_capacity) noexcept {
  keys_.clear();
  first_capacity_ = first_capacity;
  indexed_ = false;
}

std::uint32_t& key_table::free_slot(std::uint64_t hash) noexcept {
  auto at = static_cast<std::size_t>(hash) & mask_;
  while (slots_[at] != 0) at = (at + 1) & mask_;
  return slots_[at];
}

void key_table::build_index(std::size_t capacity) {
  std::size_t size = 64;
  while (size < 2 * capacity) size *= 2;
  slots_.assign(size, 0);  // no allocation while the capacity suffices
  mask_ = size - 1;
  for (std::size_t k = 0; k < keys_.size(); ++k) free_slot(keys_[k].hash) = static_cast<std::uint32_t>(k + 1);
  indexed_ = true;
}

void key_table::reserve_slot_for_next() {
  if (!indexed_ || 2 * (keys_.size() + 1) > slots_.size()) build_index(std::max(2 * keys_.size(), first_capacity_));
}

std::uint32_t key_table::add(const key& k) {
  DIX_ASSERT(k.hash == hash_of(k.log, k.table, k.id));
  const auto index = static_cast<std::uint32_t>(keys_.size());
  if (indexed_) {
    reserve_slot_for_next();
    free_slot(k.hash) = index + 1;
  }
  keys_.push_back(k);
  return index;
}

std::pair<std::uint32_t, bool> key_table::find_or_add(std::size_t log, std::uint32_t table, std::string_view id,
                                                      std::size_t first_op) {
  reserve_slot_for_next();
  const auto hash = hash_of(log, table, id);
  auto at = static_cast<std::size_t>(hash) & mask_;
  for (; slots_[at] != 0; at = (at + 1) & mask_) {
    const auto& k = keys_[slots_[at] - 1];
    if (k.hash == hash && k.id == id && k.table == table && k.log == log) return {slots_[at] - 1, false};
  }
  const auto index = static_cast<std::uint32_t>(keys_.size());
  slots_[at] = index + 1;
  keys_.push_back(key{log, table, id, hash, first_op, 0});
  return {index, true};
}

}  // namespace dix
