#include "adapters/write_batch_reader.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dix {
namespace {

std::string_view view(const rocksdb::Slice& s) { return {s.data(), s.size()}; }

class collector final : public rocksdb::WriteBatch::Handler {
 public:
  explicit collector(raw_batch& raw) : raw_(raw) {}

  rocksdb::Status PutCF(uint32_t cf, const rocksdb::Slice& k, const rocksdb::Slice& v) override {
    return add(raw_kind::put, cf, k, v);
  }
  rocksdb::Status PutEntityCF(uint32_t cf, const rocksdb::Slice& k, const rocksdb::Slice& v) override {
    return add(raw_kind::put_entity, cf, k, v);
  }
  rocksdb::Status DeleteCF(uint32_t cf, const rocksdb::Slice& k) override {
    return add(raw_kind::del, cf, k, {});
  }
  rocksdb::Status SingleDeleteCF(uint32_t cf, const rocksdb::Slice& k) override {
    return add(raw_kind::single_delete, cf, k, {});
  }
  rocksdb::Status DeleteRangeCF(uint32_t cf, const rocksdb::Slice& b, const rocksdb::Slice& e) override {
    return add(raw_kind::delete_range, cf, b, e);
  }
  rocksdb::Status MergeCF(uint32_t cf, const rocksdb::Slice& k, const rocksdb::Slice& v) override {
    return add(raw_kind::merge, cf, k, v);
  }
  rocksdb::Status PutBlobIndexCF(uint32_t cf, const rocksdb::Slice& k, const rocksdb::Slice& v) override {
    return add(raw_kind::blob_index, cf, k, v);
  }
  void LogData(const rocksdb::Slice& blob) override {
    raw_.records.push_back(raw_record{raw_kind::log_data, 0, view(blob), {}});
  }
  rocksdb::Status MarkBeginPrepare(bool) override { return add(raw_kind::begin_prepare, 0, {}, {}); }
  rocksdb::Status MarkEndPrepare(const rocksdb::Slice& x) override { return add(raw_kind::end_prepare, 0, x, {}); }
  rocksdb::Status MarkNoop(bool) override { return add(raw_kind::noop, 0, {}, {}); }
  rocksdb::Status MarkRollback(const rocksdb::Slice& x) override { return add(raw_kind::rollback, 0, x, {}); }
  rocksdb::Status MarkCommit(const rocksdb::Slice& x) override { return add(raw_kind::commit, 0, x, {}); }
  rocksdb::Status MarkCommitWithTimestamp(const rocksdb::Slice& x, const rocksdb::Slice& ts) override {
    return add(raw_kind::commit_with_timestamp, 0, x, ts);
  }

 private:
  rocksdb::Status add(raw_kind kind, uint32_t cf, const rocksdb::Slice& k, const rocksdb::Slice& v) {
    raw_.records.push_back(raw_record{kind, cf, view(k), view(v)});
    return rocksdb::Status::OK();
  }
  raw_batch& raw_;
};

// Debian's RocksDB keeps its assertions, and WriteBatch::Iterate asserts on some malformed
// records of kinds dix never writes (fuzz_wal_batch: a CommitWithTimestamp record with an empty
// timestamp aborted the process). So the records are walked here first, RocksDB's format
// (db/write_batch.cc, 7.8): as long as they are of the kinds dix writes — LogData, Put, Delete,
// DeleteRange, with or without a family id — RocksDB parses the batch as before; at the first
// record of another kind, the walk's records up to it are the raw batch, which
// decode_transaction then refuses, naming that kind, without RocksDB reading further.
class record_walk {
 public:
  explicit record_walk(std::string_view rep) : input_(rep) {}

  // True when a record of a kind dix never writes was found; `raw` then holds the records before
  // it and a record of its kind. False when every record is of a kind dix writes, or the walk met
  // bytes it cannot read or a tag it does not know (RocksDB's parser reports those); `raw.records`
  // is then empty again. The walk fills `raw.records` itself, so a reader that keeps its raw batch
  // across transactions allocates nothing here once the vector has grown.
  bool find_foreign(raw_batch& raw) {
    auto& records = raw.records;
    records.clear();
    const auto not_foreign = [&records] {
      records.clear();
      return false;
    };
    if (input_.size() < batch_header_bytes) return false;
    input_.remove_prefix(batch_header_bytes);
    while (!input_.empty()) {
      const auto tag = static_cast<std::uint8_t>(input_.front());
      input_.remove_prefix(1);
      raw_record r;
      bool has_family = false;
      switch (tag) {
        case 0x4: has_family = true; [[fallthrough]];  // kTypeColumnFamilyDeletion
        case 0x0:  // kTypeDeletion
          r.kind = raw_kind::del;
          if ((has_family && !varint32(r.family)) || !slice(r.key)) return not_foreign();
          break;
        case 0x5: has_family = true; [[fallthrough]];  // kTypeColumnFamilyValue
        case 0x1:  // kTypeValue
          r.kind = raw_kind::put;
          if ((has_family && !varint32(r.family)) || !slice(r.key) || !slice(r.value)) return not_foreign();
          break;
        case 0xE: has_family = true; [[fallthrough]];  // kTypeColumnFamilyRangeDeletion
        case 0xF:  // kTypeRangeDeletion
          r.kind = raw_kind::delete_range;
          if ((has_family && !varint32(r.family)) || !slice(r.key) || !slice(r.value)) return not_foreign();
          break;
        case 0x3:  // kTypeLogData
          r.kind = raw_kind::log_data;
          if (!slice(r.key)) return not_foreign();
          break;
        default: {
          auto kind = foreign_kind(tag);
          if (!kind) return not_foreign();
          records.push_back(raw_record{*kind, 0, {}, {}});
          return true;
        }
      }
      records.push_back(r);
    }
    return not_foreign();
  }

 private:
  static constexpr std::size_t batch_header_bytes = 12;  // sequence (8) + count (4)

  // The tags RocksDB 7.8 knows that dix never writes.
  static std::optional<raw_kind> foreign_kind(std::uint8_t tag) noexcept {
    switch (tag) {
      case 0x2: case 0x6: return raw_kind::merge;
      case 0x7: case 0x8: return raw_kind::single_delete;
      case 0x9: case 0x12: case 0x13: return raw_kind::begin_prepare;
      case 0xA: return raw_kind::end_prepare;
      case 0xB: return raw_kind::commit;
      case 0xC: return raw_kind::rollback;
      case 0xD: return raw_kind::noop;
      case 0x10: case 0x11: return raw_kind::blob_index;
      case 0x15: return raw_kind::commit_with_timestamp;
      case 0x16: case 0x17: return raw_kind::put_entity;
      default: return std::nullopt;
    }
  }

  bool varint32(std::uint32_t& out) {
    std::uint32_t value = 0;
    for (unsigned shift = 0; shift <= 28 && !input_.empty(); shift += 7) {
      const auto byte = static_cast<std::uint8_t>(input_.front());
      input_.remove_prefix(1);
      value |= static_cast<std::uint32_t>(byte & 0x7Fu) << shift;
      if ((byte & 0x80u) == 0) {
        out = value;
        return true;
      }
    }
    return false;
  }

  bool slice(std::string_view& out) {
    std::uint32_t size = 0;
    if (!varint32(size) || size > input_.size()) return false;
    out = input_.substr(0, size);
    input_.remove_prefix(size);
    return true;
  }

  std::string_view input_;
};

}  // namespace

result<void> read_write_batch(const rocksdb::WriteBatch& batch, std::uint64_t sequence,
                              raw_batch& raw) {
  raw.records.clear();
  raw.sequence = sequence;
  raw.count = batch.Count();
  raw.data_size = batch.GetDataSize();
  if (record_walk(view(batch.Data())).find_foreign(raw)) return {};
  collector handler(raw);
  auto s = batch.Iterate(&handler);
  if (!s.ok()) {
    return {errc::log_corrupt, "transaction at sequence " + std::to_string(sequence) +
                                   ": RocksDB cannot parse the batch: " + s.ToString()};
  }
  return {};
}

result<wal_transaction> decode_write_batch(std::shared_ptr<const rocksdb::WriteBatch> batch,
                                           std::uint64_t sequence, const family_map& families,
                                           raw_batch& scratch) {
  if (auto ok = read_write_batch(*batch, sequence, scratch); !ok) return ok.error();
  auto txn = decode_transaction(scratch, families);
  if (txn) txn->storage = std::move(batch);
  return txn;
}

}  // namespace dix
