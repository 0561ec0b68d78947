// The process's memory budget (decision 0014): the primary stores and every rocksdb_index
// database of the process share one RocksDB block cache of half the budget, and their memtables
// are charged to that same cache through one write-buffer manager (RocksDB's WriteBufferManager
// with cost_to_cache), which flushes them once they hold a quarter of the budget. The other half
// is the headroom for what the cache does not see: dix's own buffers, each with a cap of its own
// (runner turns and chunks, rocksdb_index_options::max_queued_bytes), the SST files' index and
// filter blocks held by RocksDB's table readers (about 1-2 % of the data), the libraries, and
// memory the allocator keeps after a free. A database in the budget also returns the memory a
// memtable flush freed to the system (glibc malloc_trim after each flush). docs/operations.md
// ("Memory") says what to expect of the process's RSS.
//
// Thread safety: every function is thread-safe. A budget set while databases are open applies to
// them at once: the cache shrinks as its entries are released, memtables flush at the new limit.
#pragma once

#include <cstdint>
#include <memory>

#include <dix/result.hpp>

namespace rocksdb {
class Cache;
struct DBOptions;
}  // namespace rocksdb

namespace dix {

struct memory_options {
  // Bytes the whole process should stay within, half of them RocksDB's block cache and
  // memtables, [16 MiB, 1 TiB]. Default: 256 MiB
  std::uint64_t budget_bytes = 256ull << 20;
};
// invalid_argument naming the field and its range.
result<void> validate(const memory_options& options);

// Sets the process's budget, for the databases open now and those opened later. Fails
// invalid_argument (and changes nothing) for options validate() refuses.
result<void> set_memory_budget(const memory_options& options);
memory_options memory_budget();

// What the budget holds now.
struct memory_usage {
  std::uint64_t budget_bytes = 0;          // memory_options::budget_bytes
  std::uint64_t cache_capacity_bytes = 0;  // half of it
  std::uint64_t memtable_limit_bytes = 0;  // a quarter of it: memtables are flushed above
  std::uint64_t used_bytes = 0;            // the cache's usage: cached blocks + memtables charged to it
  std::uint64_t memtable_bytes = 0;        // memtables of every database in the budget
};
memory_usage memory_in_use();

// For the databases that share the budget: the primary stores and the rocksdb_index databases
// use both, and so may an application's own RocksDB databases (callers include RocksDB's
// <rocksdb/options.h> and <rocksdb/table.h> themselves).
// Puts a database's memtables in the budget: sets db.write_buffer_manager to the budget's and
// adds the listener that trims after each flush to db.listeners.
void join_memory_budget(rocksdb::DBOptions& db);
// The budget's block cache, for BlockBasedTableOptions::block_cache. Never null; the same cache
// for the life of the process.
std::shared_ptr<rocksdb::Cache> budget_block_cache();

}  // namespace dix
