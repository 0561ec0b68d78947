// Drift planted in a closed RocksDB index (issue 31): its `entries` and `reverse` keys and values
// as formats.md §6.2 lays them out, and the database opened raw with its column families, as a disk fault or a
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

// An `entries` key: the index key escaped (0x00 → 0x00 0xFF), 0x00 0x01, the record ref.
inline std::string entries_key(const std::string& index_key, const std::string& ref) {
  std::string out;
  for (char c : index_key) {
    out.push_back(c);
    if (c == '\0') out.push_back('\xFF');
  }
  out.push_back('\0');
  out.push_back('\x01');
  return out + ref;
}

// Writes record `id` (table 1 of log "main") as the backend would, in both families: its
// `reverse` entry (version, projection `key`) and its one `entries` key. `old_key`, when given, is
// the entry it had, removed.
inline void put_record(rocksdb::DB& db, const std::vector<rocksdb::ColumnFamilyHandle*>& handles, const std::string& id,
                       std::uint64_t version, const std::string& key, const std::string& old_key = {}) {
  rocksdb::WriteOptions wo;
  wo.sync = true;
  const auto ref = reverse_key("main", 1, id);
  if (!old_key.empty()) REQUIRE(db.Delete(wo, handles[1], entries_key(old_key, ref)).ok());
  REQUIRE(db.Put(wo, handles[1], entries_key(key, ref), rocksdb::Slice()).ok());
  REQUIRE(db.Put(wo, handles[2], ref, reverse_value(version, encode_keys({key}))).ok());
}

// One drift of each kind in index `path` (table 1 of log "main", each record's one key "k<n>"),
// both families changed alike as a stray tool could: r2 removed, r9 added, r3 at version 1
// (stale), r4's projection replaced at its version.
inline void plant_four_drifts(const std::filesystem::path& path) {
  tamper(path, [](rocksdb::DB& db, const std::vector<rocksdb::ColumnFamilyHandle*>& handles) {
    auto* reverse = handles[2];
    rocksdb::WriteOptions wo;
    wo.sync = true;
    REQUIRE(db.Delete(wo, reverse, reverse_key("main", 1, "r2")).ok());
    REQUIRE(db.Delete(wo, handles[1], entries_key("k2", reverse_key("main", 1, "r2"))).ok());
    put_record(db, handles, "r9", 3, "k9");
    put_record(db, handles, "r3", 1, "k3");
    std::string r4;  // its version kept, its projection changed
    REQUIRE(db.Get(rocksdb::ReadOptions{}, reverse, reverse_key("main", 1, "r4"), &r4).ok());
    std::uint64_t version = 0;
    for (int i = 7; i >= 0; --i) version = (version << 8) | static_cast<std::uint8_t>(r4[static_cast<std::size_t>(i)]);
    put_record(db, handles, "r4", version, "kX", "k4");
  });
}

}  // namespace dix::test
