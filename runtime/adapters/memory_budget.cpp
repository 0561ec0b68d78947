// <dix/memory.hpp>: the process's one block cache and write-buffer manager (decision 0014).
#include <dix/memory.hpp>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <mutex>
#include <string>

#include <rocksdb/cache.h>
#include <rocksdb/listener.h>
#include <rocksdb/options.h>
#include <rocksdb/write_buffer_manager.h>

namespace dix {
namespace {

constexpr std::uint64_t min_budget_bytes = 16ull << 20;
constexpr std::uint64_t max_budget_bytes = 1ull << 40;

// Half of the budget is RocksDB's cache, memtables included; the other half is the headroom for
// what the cache does not see (decision 0014 measured it: 50–130 MB at 256 MiB, most of it
// memory the allocator kept).
std::size_t cache_bytes(std::uint64_t budget_bytes) { return static_cast<std::size_t>(budget_bytes / 2); }
// Memtables are flushed at half of the cache, so they never crowd every cached block out.
std::size_t memtable_bytes(std::uint64_t budget_bytes) { return static_cast<std::size_t>(budget_bytes / 4); }

// A flush frees a whole memtable (megabytes in 1 MiB arena blocks), but glibc's malloc keeps
// freed heap memory for reuse by the same arena, so without a trim the process's RSS holds every
// memtable it ever flushed from another thread's arena. malloc_trim returns the free pages of
// every arena; it runs on RocksDB's flush thread, once per flush.
class trim_after_flush final : public rocksdb::EventListener {
 public:
  void OnFlushCompleted(rocksdb::DB*, const rocksdb::FlushJobInfo&) override {
#if defined(__GLIBC__)
    ::malloc_trim(0);
#endif
  }
};

// Built on first use and kept for the life of the process. Every database holds the objects
// through shared pointers of its own, so one still closing at exit keeps them alive.
struct process_budget {
  std::mutex mutex;
  memory_options options;
  std::shared_ptr<rocksdb::Cache> cache;
  std::shared_ptr<rocksdb::WriteBufferManager> manager;
  std::shared_ptr<rocksdb::EventListener> trim = std::make_shared<trim_after_flush>();

  process_budget()
      : cache(rocksdb::NewLRUCache(cache_bytes(options.budget_bytes))),
        manager(std::make_shared<rocksdb::WriteBufferManager>(memtable_bytes(options.budget_bytes), cache)) {}
};

process_budget& budget() {
  static process_budget b;
  return b;
}

}  // namespace

result<void> validate(const memory_options& o) {
  if (o.budget_bytes >= min_budget_bytes && o.budget_bytes <= max_budget_bytes) return {};
  return {errc::invalid_argument, "memory_options.budget_bytes = " + std::to_string(o.budget_bytes) +
                                      ": must be in [" + std::to_string(min_budget_bytes) + ", " +
                                      std::to_string(max_budget_bytes) + "]"};
}

result<void> set_memory_budget(const memory_options& options) {
  if (auto ok = validate(options); !ok) return ok;
  auto& b = budget();
  std::lock_guard lock(b.mutex);
  b.options = options;
  b.cache->SetCapacity(cache_bytes(options.budget_bytes));
  b.manager->SetBufferSize(memtable_bytes(options.budget_bytes));
  return {};
}

memory_options memory_budget() {
  auto& b = budget();
  std::lock_guard lock(b.mutex);
  return b.options;
}

memory_usage memory_in_use() {
  auto& b = budget();
  memory_usage u;
  u.budget_bytes = memory_budget().budget_bytes;
  u.cache_capacity_bytes = b.cache->GetCapacity();
  u.memtable_limit_bytes = b.manager->buffer_size();
  u.used_bytes = b.cache->GetUsage();
  u.memtable_bytes = b.manager->memory_usage();
  return u;
}

void join_memory_budget(rocksdb::DBOptions& db) {
  auto& b = budget();
  db.write_buffer_manager = b.manager;
  db.listeners.push_back(b.trim);
}

std::shared_ptr<rocksdb::Cache> budget_block_cache() { return budget().cache; }

}  // namespace dix
