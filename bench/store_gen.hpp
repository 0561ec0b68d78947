// The generated store of the catch-up and rebuild benchmarks: record ids "r%015zu", 200-byte
// payloads whose first 8 bytes ("key%05zu", i mod 1000) are the index key, 100 records per
// transaction in table 1. One definition, so both benchmarks measure the same data.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include <dix/primary_store.hpp>

namespace dix::bench::gen {

inline constexpr std::uint32_t table = 1;
inline constexpr std::size_t payload_bytes = 200;
inline constexpr std::size_t per_txn = 100;

inline std::string record_id(std::size_t i) {
  char key[32];
  std::snprintf(key, sizeof key, "r%015zu", i);
  return key;
}

inline std::string payload_of(std::size_t i) {
  char head[16];
  std::snprintf(head, sizeof head, "key%05zu", i % 1000);
  std::string p(head);
  p.resize(payload_bytes, 'x');
  return p;
}

// Writes `records` records; returns the last transaction's sequence.
inline std::uint64_t write_records(primary_store& store, std::size_t records) {
  std::uint64_t last = 0;
  for (std::size_t i = 0; i < records; i += per_txn) {
    auto txn = store.begin();
    for (std::size_t j = i; j < std::min(i + per_txn, records); ++j) txn.put(table, record_id(j), payload_of(j));
    last = txn.commit().value().sequence;
  }
  return last;
}

}  // namespace dix::bench::gen
