#include "adapters/rocksdb_store_reader.hpp"

namespace dix {

result<std::optional<std::string>> rocksdb_store_reader::read(std::uint32_t table, std::string_view id) {
  auto& p = primary_store_access::get(*store_);
  std::shared_lock lock(p.lifecycle);
  if (!p.open) return error{errc::io_error, "primary store " + p.path.string() + " is closed"};
  auto family = p.tables.find(table);
  if (family == p.tables.end()) return std::optional<std::string>{};  // a table not created holds nothing
  std::string value;
  auto s = p.db->Get(rocksdb::ReadOptions{}, family->second, rocksdb::Slice(id.data(), id.size()), &value);
  if (s.IsNotFound()) return std::optional<std::string>{};
  if (!s.ok()) return error{errc::io_error, "reading table " + std::to_string(table) + ": " + s.ToString()};
  return std::optional<std::string>{std::move(value)};
}

result<std::uint64_t> rocksdb_store_reader::latest_sequence() {
  auto& p = primary_store_access::get(*store_);
  std::shared_lock lock(p.lifecycle);
  if (!p.open) return error{errc::io_error, "primary store " + p.path.string() + " is closed"};
  return p.db->GetLatestSequenceNumber();
}

}  // namespace dix
