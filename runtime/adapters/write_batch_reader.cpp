#include "adapters/write_batch_reader.hpp"

#include <string>

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

}  // namespace

result<void> read_write_batch(const rocksdb::WriteBatch& batch, std::uint64_t sequence,
                              raw_batch& raw) {
  raw.records.clear();
  raw.sequence = sequence;
  raw.count = batch.Count();
  raw.data_size = batch.GetDataSize();
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
