// <dix/memory.hpp> (runtime/adapters/memory_budget.cpp) over real RocksDB: the budget's range,
// how it splits, that it applies to databases already open, and that a primary store and an
// index database share its cache and its memtable limit.
#include <catch2/catch.hpp>

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>

#include <dix/backends/rocksdb_index_backend.hpp>
#include <dix/memory.hpp>

#include "adapters/test_support.hpp"

using namespace dix;
using dix::test::temp_dir;

namespace {

constexpr std::uint64_t mib = 1ull << 20;

// The budget is the process's: each test puts the default back when it ends.
struct default_budget_after {
  ~default_budget_after() { ignore_result(set_memory_budget({}), "the default is always valid"); }
};

// The block cache of a column family's block-based table options.
const rocksdb::Cache* block_cache_of(const rocksdb::ColumnFamilyOptions& o) {
  const auto* table = o.table_factory->GetOptions<rocksdb::BlockBasedTableOptions>();
  return table == nullptr ? nullptr : table->block_cache.get();
}

// Commits `transactions` transactions of 64 records of 4 KiB each (256 KiB per transaction).
void write_kib(primary_store& s, int transactions) {
  const std::string payload(4096, 'x');
  for (int t = 0; t < transactions; ++t) {
    auto txn = s.begin();
    for (int i = 0; i < 64; ++i) txn.put(1, "k" + std::to_string(t) + "-" + std::to_string(i), payload);
    REQUIRE(txn.commit());
  }
}

}  // namespace

TEST_CASE("memory budget: a budget outside [16 MiB, 1 TiB] is refused naming the field, and the budget stays as it was", "[adapter][memory]") {
  default_budget_after restore;
  CHECK(validate(memory_options{}));
  CHECK(memory_options{}.budget_bytes == 256 * mib);
  auto small = set_memory_budget({16 * mib - 1});
  REQUIRE_FALSE(small);
  CHECK(small.error().value() == errc::invalid_argument);
  CHECK(small.error().message() == "memory_options.budget_bytes = 16777215: must be in [16777216, 1099511627776]");
  CHECK_FALSE(set_memory_budget({(1ull << 40) + 1}));
  CHECK(memory_budget().budget_bytes == 256 * mib);
  CHECK(memory_in_use().cache_capacity_bytes == 128 * mib);
  CHECK(set_memory_budget({16 * mib}));
  CHECK(set_memory_budget({1ull << 40}));
}

TEST_CASE("memory budget: half of it is the shared block cache and a quarter the memtable limit, changed at once", "[adapter][memory]") {
  default_budget_after restore;
  auto u = memory_in_use();
  CHECK(u.budget_bytes == 256 * mib);
  CHECK(u.cache_capacity_bytes == 128 * mib);
  CHECK(u.memtable_limit_bytes == 64 * mib);
  REQUIRE(set_memory_budget({64 * mib}));
  u = memory_in_use();
  CHECK(memory_budget().budget_bytes == 64 * mib);
  CHECK(u.budget_bytes == 64 * mib);
  CHECK(u.cache_capacity_bytes == 32 * mib);
  CHECK(u.memtable_limit_bytes == 16 * mib);
}

TEST_CASE("memory budget: a primary store's tables and an index database's families cache their blocks in the budget's one cache", "[adapter][memory]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  auto& p = primary_store_access::get(*s);
  const auto* cache = budget_block_cache().get();
  CHECK(block_cache_of(p.db->GetOptions(p.tables.at(1))) == cache);
  CHECK(block_cache_of(p.db->GetOptions(p.meta)) == cache);

  rocksdb::DBOptions o;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  rocksdb_index_open_options(o, families);
  REQUIRE(families.size() == 4);
  for (const auto& f : families) CHECK(block_cache_of(f.options) == cache);
  CHECK(o.write_buffer_manager != nullptr);
  CHECK(o.write_buffer_manager == p.db->GetDBOptions().write_buffer_manager);
}

TEST_CASE("memory budget: a primary store's memtables are flushed at a quarter of the budget and charged to the cache", "[adapter][memory]") {
  default_budget_after restore;
  REQUIRE(set_memory_budget({16 * mib}));  // memtables flushed above 4 MiB
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  write_kib(*s, 48);  // 12 MiB
  auto& p = primary_store_access::get(*s);
  std::uint64_t active_entries = 0;
  REQUIRE(p.db->GetIntProperty(p.tables.at(1), "rocksdb.num-entries-active-mem-table", &active_entries));
  // The write path switches the memtable as soon as the budget's limit is passed (its flush runs
  // in the background, so how much the next memtable takes meanwhile is not fixed); RocksDB's
  // own 64 MiB memtable would still hold all 48 × 64 records.
  CHECK(active_entries < 48 * 64);
  auto u = memory_in_use();
  CHECK(u.memtable_bytes > 0);
  CHECK(u.used_bytes >= u.memtable_bytes);  // memtables are charged to the cache
}

TEST_CASE("memory budget: an index database's writes count in the same memtable total as the primary store's", "[adapter][memory]") {
  temp_dir dir;
  auto s = test::open_store(dir / "db");
  rocksdb::DBOptions o;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  rocksdb_index_open_options(o, families);
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  REQUIRE(rocksdb::DB::Open(o, (dir / "index").string(), families, &handles, &raw).ok());
  std::unique_ptr<rocksdb::DB> index(raw);
  const auto before = memory_in_use().memtable_bytes;
  write_kib(*s, 4);  // 1 MiB into the primary store
  const auto after_store = memory_in_use().memtable_bytes;
  CHECK(after_store >= before + mib);
  rocksdb::WriteBatch batch;
  const std::string value(4096, 'y');
  for (int i = 0; i < 256; ++i) batch.Put(handles[1], "entry-" + std::to_string(i), value).PermitUncheckedError();
  REQUIRE(index->Write(rocksdb::WriteOptions{}, &batch).ok());  // 1 MiB into the index
  CHECK(memory_in_use().memtable_bytes >= after_store + mib);
  for (auto* h : handles) CHECK(index->DestroyColumnFamilyHandle(h).ok());
  CHECK(index->Close().ok());
}
