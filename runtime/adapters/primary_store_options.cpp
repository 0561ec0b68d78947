// The RocksDB options of a primary store and its column families (formats.md §1.1): the database's
// and every family's options, the families' names (default, dix.meta, table.<id>), listing them
// before an open, installing their handles after it, and the family map the WAL readers use.
#include "adapters/primary_store_detail.hpp"

#include <charconv>

#include <rocksdb/table.h>

#include <dix/memory.hpp>

#include "core/names.hpp"

namespace dix {
namespace store_detail {
namespace {

constexpr std::string_view table_prefix = "table.";

}  // namespace

std::string table_family_name(std::uint32_t table) {
  return std::string(table_prefix) + std::to_string(table);
}

// "table.<id>", id in decimal without leading zeros, 1 ≤ id ≤ 4 294 967 295.
std::optional<std::uint32_t> parse_table_family(std::string_view name) {
  if (name.substr(0, table_prefix.size()) != table_prefix) return std::nullopt;
  auto digits = name.substr(table_prefix.size());
  if (digits.empty() || digits.front() == '0') return std::nullopt;
  std::uint32_t id = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), id);
  if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
  return id;
}

rocksdb::DBOptions db_options(const store_options& o) {
  rocksdb::DBOptions d;
  d.create_if_missing = o.create_if_missing;
  d.create_missing_column_families = false;
  // formats.md §1.1: one WriteBatch = one WAL record, WAL never recycled, SyncWAL allowed.
  d.unordered_write = false;
  d.two_write_queues = false;
  d.recycle_log_file_num = 0;
  d.manual_wal_flush = false;
  d.allow_mmap_writes = false;
  // No fallocate (decision 0013): a preallocation larger than the free space (a WAL file asks
  // for 1.1 × write_buffer_size) fills the filesystem until it fails, and every other writer —
  // the LOG, an index, another store — meets ENOSPC meanwhile.
  d.allow_fallocate = false;
  // Decision 0034: recovery tolerates only an incomplete last record (a crash's torn, unsynced
  // tail) and fails the open on damage anywhere else. RocksDB's default, kPointInTimeRecovery,
  // stops at the first damaged record without an error and drops every transaction after it.
  d.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  d.WAL_ttl_seconds = o.wal_ttl_s;
  d.WAL_size_limit_MB = o.wal_size_limit_mb;
  if (o.max_total_wal_size != 0) d.max_total_wal_size = o.max_total_wal_size;
  join_memory_budget(d);  // the process's memory budget (decision 0014)
  return d;
}

// Every column family's options: RocksDB's, with the store's memtable size when it sets one and
// the block cache of the process's memory budget.
rocksdb::ColumnFamilyOptions family_options(const store_options& o) {
  rocksdb::ColumnFamilyOptions c;
  if (o.write_buffer_size != 0) c.write_buffer_size = static_cast<std::size_t>(o.write_buffer_size);
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = budget_block_cache();
  c.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return c;
}

// Whether `path/CURRENT` exists; a failed look (a loop, a name too long, no search permission)
// is io_error naming the path instead of an exception.
result<bool> has_current(const std::filesystem::path& path) {
  std::error_code ec;
  const auto current = path / "CURRENT";
  const bool found = std::filesystem::exists(current, ec);
  if (ec) return error{errc::io_error, "cannot look for " + current.string() + ": " + ec.message()};
  return found;
}

result<open_families> list_families(const std::filesystem::path& path, bool may_be_new) {
  std::vector<std::string> names;
  open_families out;
  auto s = rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions{}, path.string(), &names);
  out.existing = s.ok();
  if (!s.ok()) {
    auto found = has_current(path);
    if (!found) return found.error();
    if (may_be_new && !*found) names = {"default"};
    else return error{errc::io_error, "cannot list column families of " + path.string() + ": " + s.ToString()};
  }
  for (const auto& name : names) {
    if (name == meta_family_name) {
      out.has_meta = true;
    } else if (name != rocksdb::kDefaultColumnFamilyName && !parse_table_family(name)) {
      return error{errc::store_format_mismatch,
                   path.string() + " has column family \"" + escape_bytes(name) +
                       "\", which a dix primary store never creates"};
    }
    out.descriptors.emplace_back(name, rocksdb::ColumnFamilyOptions{});
  }
  return out;
}

void install_handles(primary_store::impl& p, std::vector<rocksdb::ColumnFamilyHandle*> handles) {
  p.handles = std::move(handles);
  for (auto* h : p.handles) {
    if (h->GetName() == meta_family_name) p.meta = h;
    else if (auto table = parse_table_family(h->GetName())) p.tables[*table] = h;
  }
}

}  // namespace store_detail

using namespace store_detail;

family_map primary_store::impl::families() const {
  family_map map;
  for (auto* h : handles) {
    family_role role;
    if (h == meta) role.kind = family_kind::meta;
    else if (auto table = parse_table_family(h->GetName())) role = {family_kind::table, *table};
    map[h->GetID()] = role;
  }
  return map;
}

}  // namespace dix
