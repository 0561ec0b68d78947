// batch_builder (primary_store_impl.hpp): a dix transaction's WriteBatch, its header and value
// versions written as placeholders and stamped in place under the commit mutex (formats.md §1.2).
#include "adapters/primary_store_detail.hpp"

#include "core/bytes.hpp"
#include "core/txn_header.hpp"

namespace dix {

using namespace store_detail;

batch_builder::batch_builder() {
  // The header is the first record; its bytes are the last 24 of the rep after PutLogData.
  auto s = PutLogData(encode_header(txn_header{}));
  (void)s;  // appending to an in-memory batch cannot fail
  header_offset_ = rep_.size() - txn_header_bytes;
}

void batch_builder::put_versioned(rocksdb::ColumnFamilyHandle* family, std::string_view key,
                                  std::string_view payload) {
  static constexpr char zero_version[value_version_bytes] = {};
  rocksdb::Slice k = slice(key);
  rocksdb::Slice parts[2] = {rocksdb::Slice(zero_version, value_version_bytes), slice(payload)};
  auto s = Put(family, rocksdb::SliceParts(&k, 1), rocksdb::SliceParts(parts, 2));
  (void)s;  // sizes were validated (≤ 4096-byte ids); RocksDB's only failure is > 4 GiB
  // A Put record ends with its value, so the version starts value-length bytes from the end.
  version_offsets_.push_back(rep_.size() - value_version_bytes - payload.size());
  ++ops_;
}

void batch_builder::put_plain(rocksdb::ColumnFamilyHandle* family, std::string_view key, std::string_view value) {
  auto s = Put(family, slice(key), slice(value));
  (void)s;
  ++ops_;
}

void batch_builder::del(rocksdb::ColumnFamilyHandle* family, std::string_view key) {
  auto s = Delete(family, slice(key));
  (void)s;
  ++ops_;
}

void batch_builder::delete_range(rocksdb::ColumnFamilyHandle* family, std::string_view begin, std::string_view end) {
  auto s = DeleteRange(family, slice(begin), slice(end));
  (void)s;
  ++ops_;
}

void batch_builder::stamp(std::uint8_t flags, index_time_t time) {
  auto header = encode_header(txn_header{flags, time, ops_});
  rep_.replace(header_offset_, txn_header_bytes, header);
  std::string version;
  put_le<std::uint64_t>(version, time);
  for (auto offset : version_offsets_) rep_.replace(offset, value_version_bytes, version);
}

}  // namespace dix
