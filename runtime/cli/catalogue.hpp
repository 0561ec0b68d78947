// The demo workload: a product catalogue in table 1 — inserts, updates and deletes of records
// whose payload names a category and a brand — shared by `dix write` and `dix demo`.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include <dix/primary_store.hpp>

namespace dix::cli {

inline constexpr std::uint32_t products_table = 1;

class catalogue {
 public:
  // Continues numbering after the `existing` records a store already holds.
  catalogue(std::uint64_t seed, std::uint64_t existing) : rng_(seed), next_id_(existing + 1) {}

  struct counts {
    std::uint64_t inserts = 0, updates = 0, deletes = 0;
  };
  // Adds `n` operations to `txn` (70 % inserts, 20 % updates, 10 % deletes).
  void fill(transaction& txn, std::uint64_t n, counts& c);

  static std::string id(std::uint64_t n);

 private:
  std::string payload(std::uint64_t n);
  std::mt19937_64 rng_;
  std::uint64_t next_id_;
};

// The highest product number in the store's table 1 (ids sort numerically), 0 when empty.
result<std::uint64_t> highest_id(const primary_store& store);

// The value of "field":"…" in a catalogue payload, or nullopt.
std::optional<std::string_view> field_of(std::string_view payload, std::string_view field);

}  // namespace dix::cli
