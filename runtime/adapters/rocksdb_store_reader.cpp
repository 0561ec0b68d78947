#include "adapters/rocksdb_store_reader.hpp"

#include "adapters/meta_records.hpp"
#include "adapters/store_ports.hpp"

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

namespace {

// MultiGet of `ids` in `table` under `ro`; the caller holds the lifecycle lock, the store open.
result<std::vector<std::optional<std::string>>> multi_get(primary_store::impl& p, const rocksdb::ReadOptions& ro,
                                                          std::uint32_t table, const std::vector<std::string_view>& ids) {
  std::vector<std::optional<std::string>> out(ids.size());
  auto family = p.tables.find(table);
  if (family == p.tables.end() || ids.empty()) return out;
  std::vector<rocksdb::Slice> keys;
  keys.reserve(ids.size());
  for (auto id : ids) keys.emplace_back(id.data(), id.size());
  std::vector<rocksdb::PinnableSlice> values(ids.size());
  std::vector<rocksdb::Status> statuses(ids.size());
  p.db->MultiGet(ro, family->second, ids.size(), keys.data(), values.data(), statuses.data());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (statuses[i].IsNotFound()) continue;
    if (!statuses[i].ok()) return error{errc::io_error, "reading table " + std::to_string(table) + ": " + statuses[i].ToString()};
    out[i] = values[i].ToString();
  }
  return out;
}

}  // namespace

result<std::vector<std::optional<std::string>>> rocksdb_store_reader::read_many(
    std::uint32_t table, const std::vector<std::string_view>& ids) {
  auto& p = primary_store_access::get(*store_);
  std::shared_lock lock(p.lifecycle);
  if (!p.open) return error{errc::io_error, "primary store " + p.path.string() + " is closed"};
  return multi_get(p, rocksdb::ReadOptions{}, table, ids);
}

result<bool> rocksdb_store_reader::sync_wal(std::uint64_t covering) {
  auto done = dix::sync_wal(*store_, covering);
  if (!done) return done.error();
  return done->called;
}

shared_reads* rocksdb_store_reader::shared() noexcept { return primary_store_access::get(*store_).reads.get(); }

result<std::uint64_t> rocksdb_store_reader::latest_sequence() {
  auto& p = primary_store_access::get(*store_);
  std::shared_lock lock(p.lifecycle);
  if (!p.open) return error{errc::io_error, "primary store " + p.path.string() + " is closed"};
  return p.db->GetLatestSequenceNumber();
}

result<boundary_commit> rocksdb_store_reader::commit_boundary(std::string_view id, epoch_t epoch) {
  auto done = commit_system(*store_, {meta_op{op_kind::put, meta::boundary_key(id), meta::encode_u64(epoch)}});
  if (!done) return done.error();
  return boundary_commit{done->sequence, done->time};
}

namespace {

// A RocksDB snapshot and one iterator over it. Both are dropped when the store closes (the close
// listener runs under the exclusive lifecycle lock); a call after that is an io_error.
class rocksdb_snapshot final : public store_snapshot {
 public:
  explicit rocksdb_snapshot(std::shared_ptr<primary_store> store) : store_(std::move(store)) {}
  ~rocksdb_snapshot() override {
    auto& p = primary_store_access::get(*store_);
    {
      std::shared_lock lock(p.lifecycle);
      drop();
    }
    remove_close_listener(*store_, close_listener_);
  }

  // Caller holds the lifecycle lock (shared), the store open.
  void take(primary_store::impl& p) {
    db_ = p.db.get();
    snapshot_ = db_->GetSnapshot();
    sequence_ = snapshot_->GetSequenceNumber();
    close_listener_ = add_close_listener(*store_, [this] { drop(); });
  }

  result<void> seek(std::uint32_t table, std::string_view after) override {
    auto& p = primary_store_access::get(*store_);
    std::shared_lock lock(p.lifecycle);
    if (!p.open || !snapshot_) return closed(p);
    iterator_.reset();
    auto family = p.tables.find(table);
    table_ = table;
    if (family == p.tables.end()) return {};  // a table not created holds nothing
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot_;
    ro.fill_cache = false;  // a full scan would evict what live reads use
    ro.readahead_size = 2 << 20;
    iterator_.reset(db_->NewIterator(ro, family->second));
    if (after.empty()) {
      iterator_->SeekToFirst();
    } else {
      iterator_->Seek(rocksdb::Slice(after.data(), after.size()));
      if (iterator_->Valid() && iterator_->key() == rocksdb::Slice(after.data(), after.size())) iterator_->Next();
    }
    first_ = true;
    return status_of(p);
  }

  result<std::optional<scan_entry>> next() override {
    auto& p = primary_store_access::get(*store_);
    std::shared_lock lock(p.lifecycle);
    if (!p.open || !snapshot_) return closed(p);
    if (!iterator_) return std::optional<scan_entry>{};
    // Next() on an iterator past its end is undefined (RocksDB asserts): the end stays the end.
    if (!first_ && iterator_->Valid()) iterator_->Next();
    first_ = false;
    if (!iterator_->Valid()) {
      if (auto s = status_of(p); !s) return s.error();
      return std::optional<scan_entry>{};
    }
    const auto k = iterator_->key();
    const auto v = iterator_->value();
    return std::optional<scan_entry>{scan_entry{{k.data(), k.size()}, {v.data(), v.size()}}};
  }

  std::uint64_t sequence() const noexcept override { return sequence_; }

  result<std::vector<std::optional<std::string>>> read_many(std::uint32_t table,
                                                            const std::vector<std::string_view>& ids) override {
    auto& p = primary_store_access::get(*store_);
    std::shared_lock lock(p.lifecycle);
    if (!p.open || !snapshot_) return closed(p);
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot_;
    return multi_get(p, ro, table, ids);
  }

 private:
  void drop() noexcept {
    iterator_.reset();
    if (snapshot_) db_->ReleaseSnapshot(snapshot_);
    snapshot_ = nullptr;
  }
  error closed(const primary_store::impl& p) const {
    return error{errc::io_error, "primary store " + p.path.string() + " closed while a snapshot of it was read"};
  }
  result<void> status_of(const primary_store::impl& p) const {
    if (!iterator_ || iterator_->status().ok()) return {};
    return error{errc::io_error, "scanning table " + std::to_string(table_) + " of " + p.path.string() + ": " +
                                     iterator_->status().ToString()};
  }

  std::shared_ptr<primary_store> store_;
  rocksdb::DB* db_ = nullptr;
  const rocksdb::Snapshot* snapshot_ = nullptr;
  std::uint64_t sequence_ = 0;
  std::unique_ptr<rocksdb::Iterator> iterator_;
  std::uint64_t close_listener_ = 0;
  std::uint32_t table_ = 0;
  bool first_ = true;
};

}  // namespace

result<std::unique_ptr<store_snapshot>> rocksdb_store_reader::snapshot() {
  auto& p = primary_store_access::get(*store_);
  auto snap = std::make_unique<rocksdb_snapshot>(store_);
  std::shared_lock lock(p.lifecycle);
  if (!p.open) return error{errc::io_error, "primary store " + p.path.string() + " is closed"};
  snap->take(p);
  return std::unique_ptr<store_snapshot>(std::move(snap));
}

result<table_estimate> rocksdb_store_reader::estimate(std::uint32_t table) {
  auto& p = primary_store_access::get(*store_);
  std::shared_lock lock(p.lifecycle);
  if (!p.open) return error{errc::io_error, "primary store " + p.path.string() + " is closed"};
  table_estimate e;
  auto family = p.tables.find(table);
  if (family == p.tables.end()) return e;
  std::uint64_t v = 0;
  if (p.db->GetIntProperty(family->second, "rocksdb.estimate-num-keys", &v)) e.keys = v;
  if (p.db->GetIntProperty(family->second, "rocksdb.estimate-live-data-size", &v)) e.live_bytes = v;
  return e;
}

std::shared_ptr<store_reader> make_rocksdb_store_reader(std::shared_ptr<primary_store> store) {
  return std::make_shared<rocksdb_store_reader>(std::move(store));
}

}  // namespace dix
