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

result<std::vector<std::optional<std::string>>> rocksdb_store_reader::read_many(
    std::uint32_t table, const std::vector<std::string_view>& ids) {
  auto& p = primary_store_access::get(*store_);
  std::shared_lock lock(p.lifecycle);
  if (!p.open) return error{errc::io_error, "primary store " + p.path.string() + " is closed"};
  std::vector<std::optional<std::string>> out(ids.size());
  auto family = p.tables.find(table);
  if (family == p.tables.end() || ids.empty()) return out;
  std::vector<rocksdb::Slice> keys;
  keys.reserve(ids.size());
  for (auto id : ids) keys.emplace_back(id.data(), id.size());
  std::vector<rocksdb::PinnableSlice> values(ids.size());
  std::vector<rocksdb::Status> statuses(ids.size());
  p.db->MultiGet(rocksdb::ReadOptions{}, family->second, ids.size(), keys.data(), values.data(), statuses.data());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (statuses[i].IsNotFound()) continue;
    if (!statuses[i].ok()) return error{errc::io_error, "reading table " + std::to_string(table) + ": " + statuses[i].ToString()};
    out[i] = values[i].ToString();
  }
  return out;
}

result<std::uint64_t> rocksdb_store_reader::latest_sequence() {
  auto& p = primary_store_access::get(*store_);
  std::shared_lock lock(p.lifecycle);
  if (!p.open) return error{errc::io_error, "primary store " + p.path.string() + " is closed"};
  return p.db->GetLatestSequenceNumber();
}

}  // namespace dix
