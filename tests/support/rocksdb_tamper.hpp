// Drift planted in a closed RocksDB index (issue 31): its `reverse` keys and values as formats.md
// §6.2 lays them out, and the database opened raw with its column families, as a disk fault or a
// stray tool could change it.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <dix/backends/rocksdb_index_backend.hpp>

namespace dix::test {

// A record ref as the backend keys `reverse`: u8 log length, log, u32 big-endian table, record id.
inline std::string reverse_key(const std::string& log, std::uint32_t table, const std::string& id) {
  std::string out(1, static_cast<char>(log.size()));
  out += log;
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((table >> shift) & 0xFF));
  return out + id;
}

// A `reverse` value: u64 little-endian version, then the projection.
inline std::string reverse_value(std::uint64_t version, const std::string& projection) {
  std::string out;
  for (int shift = 0; shift < 64; shift += 8) out.push_back(static_cast<char>((version >> shift) & 0xFF));
  return out + projection;
}

// Opens the closed index at `path` as a plain RocksDB database with its families (default,
// entries, reverse, meta) and hands it to `change`.
inline void tamper(const std::filesystem::path& path,
                   const std::function<void(rocksdb::DB&, const std::vector<rocksdb::ColumnFamilyHandle*>&)>& change) {
  rocksdb::DBOptions o;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  rocksdb_index_open_options(o, families);
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  REQUIRE(rocksdb::DB::Open(o, path.string(), families, &handles, &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  change(*db, handles);
  for (auto* h : handles) REQUIRE(db->DestroyColumnFamilyHandle(h).ok());
  REQUIRE(db->Close().ok());
}

// One drift of each kind in the `reverse` of index `path` (table 1 of log "main"): r2 removed,
// r9 added, r3 at version 1 (stale), r4's projection replaced at its version.
inline void plant_four_drifts(const std::filesystem::path& path) {
  tamper(path, [](rocksdb::DB& db, const std::vector<rocksdb::ColumnFamilyHandle*>& handles) {
    auto* reverse = handles[2];
    rocksdb::WriteOptions wo;
    wo.sync = true;
    REQUIRE(db.Delete(wo, reverse, reverse_key("main", 1, "r2")).ok());
    REQUIRE(db.Put(wo, reverse, reverse_key("main", 1, "r9"), reverse_value(3, encode_keys({"k9"}))).ok());
    REQUIRE(db.Put(wo, reverse, reverse_key("main", 1, "r3"), reverse_value(1, encode_keys({"k3"}))).ok());
    std::string r4;  // its version kept, its projection changed
    REQUIRE(db.Get(rocksdb::ReadOptions{}, reverse, reverse_key("main", 1, "r4"), &r4).ok());
    REQUIRE(db.Put(wo, reverse, reverse_key("main", 1, "r4"), r4.substr(0, 8) + encode_keys({"kX"})).ok());
  });
}

}  // namespace dix::test
