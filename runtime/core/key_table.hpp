// key_table: the distinct keys one drain turn collected (protocol.md §4.2), in first-occurrence
// order, with a lookup by identity (log, table, record id).
//
// Open addressing with linear probing over 32-bit slots (key index + 1; 0: empty), at most half
// full, sized in powers of two from 64. The index over the keys is built lazily, by the first
// find_or_add() after clear(): keys a turn takes over from the previous one (add()) are appended
// without hashing anything, and a turn that never looks a key up never builds it. clear() keeps
// both allocations, so a turn allocates here only when it holds more keys than any turn before.
//
// Record ids are views: their bytes belong to the caller and must stay valid while the key is
// used (until clear()). Not thread-safe; standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace dix {

class key_table {
 public:
  struct key {
    std::size_t log = 0;  // the log's index in attach order
    std::uint32_t table = 0;
    std::string_view id;     // the record id (the caller's bytes)
    std::uint64_t hash = 0;  // hash_of(log, table, id)
    // The caller's bookkeeping, which the table neither reads nor changes.
    std::size_t first_op = 0;        // the collected operation that first named the key
    std::uint64_t last_version = 0;  // the header time of its last occurrence
    std::uint64_t last_sequence = 0;  // the end sequence of the transaction of its last occurrence
  };

  // Hash of a key's identity; the same in every turn, so a turn can carry hashes to the next.
  static std::uint64_t hash_of(std::size_t log, std::uint32_t table, std::string_view id) noexcept;

  // Forgets every key. The index is first sized for max(first_capacity, 2 × keys held then).
  void clear(std::size_t first_capacity) noexcept;

  // Appends `k`, which the caller knows is not in the table, with its hash already set (e.g. a
  // key carried from the previous turn). Returns its index.
  std::uint32_t add(const key& k);

  // The index of the key (log, table, id); when absent, it is appended first, with `first_op`
  // and last_version 0. `second`: whether it was appended.
  std::pair<std::uint32_t, bool> find_or_add(std::size_t log, std::uint32_t table, std::string_view id,
                                             std::size_t first_op);

  // Keys in first-occurrence order; an index stays valid until clear().
  key& operator[](std::size_t index) noexcept { return keys_[index]; }
  const key& operator[](std::size_t index) const noexcept { return keys_[index]; }
  std::size_t size() const noexcept { return keys_.size(); }
  bool empty() const noexcept { return keys_.empty(); }
  std::vector<key>::const_iterator begin() const noexcept { return keys_.begin(); }
  std::vector<key>::const_iterator end() const noexcept { return keys_.end(); }

  // For the tests: the slots the index has now (0 before it is built), and what it can hold
  // without allocating.
  std::size_t test_slot_count() const noexcept { return indexed_ ? slots_.size() : 0; }
  std::size_t test_slot_capacity() const noexcept { return slots_.capacity(); }

 private:
  // (Re)builds the index for `capacity` keys over every key held; grows it when the next key
  // would make it more than half full.
  void build_index(std::size_t capacity);
  void reserve_slot_for_next();
  std::uint32_t& free_slot(std::uint64_t hash) noexcept;

  std::vector<key> keys_;
  std::vector<std::uint32_t> slots_;  // kept across clear() for its capacity
  std::size_t mask_ = 0;
  std::size_t first_capacity_ = 0;
  bool indexed_ = false;
};

}  // namespace dix
