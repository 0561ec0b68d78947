// A primary store's tables and reads: create_table, has_table, get and scan over the table.<id>
// families (values decoded as formats.md §1.2 stores them), and the store's plain accessors.
#include "adapters/primary_store_detail.hpp"

#include "core/clock.hpp"
#include "core/index_time.hpp"
#include "core/txn_header.hpp"

namespace dix {

using namespace store_detail;

result<void> primary_store::create_table(std::uint32_t table) {
  if (table == 0) return {errc::invalid_argument, "table id 0: must be in [1, 4294967295]"};
  std::unique_lock lock(impl_->lifecycle);
  if (!impl_->open) return {errc::io_error, "primary store " + impl_->path.string() + " is closed"};
  if (impl_->tables.count(table) != 0) return {};
  if (impl_->read_only) return {errc::invalid_argument, "primary store " + impl_->path.string() + " is open read-only"};
  rocksdb::ColumnFamilyHandle* handle = nullptr;
  auto s = impl_->db->CreateColumnFamily(family_options(impl_->options), table_family_name(table), &handle);
  if (!s.ok()) return {errc::io_error, "creating table " + std::to_string(table) + ": " + s.ToString()};
  impl_->handles.push_back(handle);
  impl_->tables[table] = handle;
  return {};
}

bool primary_store::has_table(std::uint32_t table) const {
  std::shared_lock lock(impl_->lifecycle);
  return impl_->tables.count(table) != 0;
}

result<std::optional<record>> primary_store::get(std::uint32_t table, std::string_view id) const {
  std::shared_lock lock(impl_->lifecycle);
  if (!impl_->open) return error{errc::io_error, "primary store " + impl_->path.string() + " is closed"};
  auto family = impl_->tables.find(table);
  if (family == impl_->tables.end()) {
    return error{errc::invalid_argument, "unknown table " + std::to_string(table)};
  }
  rocksdb::PinnableSlice value;
  auto s = impl_->db->Get(rocksdb::ReadOptions{}, family->second, slice(id), &value);
  if (s.IsNotFound()) return std::optional<record>{};
  if (!s.ok()) return error{errc::io_error, "reading table " + std::to_string(table) + ": " + s.ToString()};
  auto decoded = decode_value(value.ToStringView());
  if (!decoded) {
    return error{errc::record_corrupt, "table " + std::to_string(table) + ": " + decoded.error().message()};
  }
  return std::optional<record>{record{decoded->version, std::string(decoded->payload)}};
}

result<void> primary_store::scan(std::uint32_t table, std::string_view from,
                                 const std::function<bool(std::string_view, const record&)>& fn) const {
  std::shared_lock lock(impl_->lifecycle);
  if (!impl_->open) return {errc::io_error, "primary store " + impl_->path.string() + " is closed"};
  auto family = impl_->tables.find(table);
  if (family == impl_->tables.end()) return {errc::invalid_argument, "unknown table " + std::to_string(table)};
  std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(rocksdb::ReadOptions{}, family->second));
  record r;
  for (it->Seek(slice(from)); it->Valid(); it->Next()) {
    auto decoded = decode_value(it->value().ToStringView());
    if (!decoded) {
      return {errc::record_corrupt, "table " + std::to_string(table) + ": " + decoded.error().message()};
    }
    r.version = decoded->version;
    r.payload.assign(decoded->payload);
    if (!fn(it->key().ToStringView(), r)) return {};
  }
  if (!it->status().ok()) return {errc::io_error, "scanning table " + std::to_string(table) + ": " + it->status().ToString()};
  return {};
}

index_time_t primary_store::index_time() {
  return process_index_time().next(system_clock().wall_now_ns());
}

const std::string& primary_store::log_name() const noexcept { return impl_->options.log_name; }
const std::string& primary_store::identity() const noexcept { return impl_->identity; }
const std::filesystem::path& primary_store::path() const noexcept { return impl_->path; }

result<void> primary_store::close() { return impl_->close(); }

}  // namespace dix
