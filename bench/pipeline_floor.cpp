#include "pipeline_floor.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include "paced_writer.hpp"
#include "report.hpp"

namespace dix::bench {
namespace {

void check(const rocksdb::Status& s, const char* what) {
  if (!s.ok()) throw std::runtime_error(std::string("pipeline floor: ") + what + ": " + s.ToString());
}

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// A DB with the default family and `names`, created fresh; handles in the order of `names`.
struct raw_db {
  std::unique_ptr<rocksdb::DB> db;
  std::vector<rocksdb::ColumnFamilyHandle*> families;  // [0] default, then `names`

  raw_db(const std::filesystem::path& path, const std::vector<std::pair<std::string, rocksdb::ColumnFamilyOptions>>& names) {
    rocksdb::DBOptions o;
    o.create_if_missing = true;
    o.create_missing_column_families = true;
    o.allow_fallocate = false;
    o.WAL_ttl_seconds = 3600;  // the primary's WAL files stay readable after a memtable flush
    std::vector<rocksdb::ColumnFamilyDescriptor> descriptors{{rocksdb::kDefaultColumnFamilyName, {}}};
    for (const auto& [name, options] : names) descriptors.emplace_back(name, options);
    rocksdb::DB* raw = nullptr;
    check(rocksdb::DB::Open(o, path.string(), descriptors, &families, &raw), "open");
    db.reset(raw);
  }
  ~raw_db() {
    for (auto* f : families) db->DestroyColumnFamilyHandle(f).PermitUncheckedError();
    db->Close().PermitUncheckedError();
  }
  raw_db(const raw_db&) = delete;
  raw_db& operator=(const raw_db&) = delete;
};

// The families of a RocksDB index as rocksdb_index_backend opens them: entries and reverse with a
// memtable insert hint (writes go in key order), the reverse family with a memtable bloom filter.
std::vector<std::pair<std::string, rocksdb::ColumnFamilyOptions>> index_families() {
  rocksdb::ColumnFamilyOptions entries, reverse, meta;
  entries.memtable_insert_with_hint_prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(0));
  reverse.memtable_insert_with_hint_prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(0));
  reverse.memtable_prefix_bloom_size_ratio = 0.02;
  reverse.memtable_whole_key_filtering = true;
  return {{"entries", entries}, {"reverse", reverse}, {"meta", meta}};
}

// The record ids and header time of one WAL batch.
class batch_keys : public rocksdb::WriteBatch::Handler {
 public:
  std::vector<std::string>* ids = nullptr;
  std::vector<std::uint32_t>* families = nullptr;
  rocksdb::Status PutCF(std::uint32_t family, const rocksdb::Slice& key, const rocksdb::Slice&) override {
    ids->emplace_back(key.data(), key.size());
    families->push_back(family);
    return rocksdb::Status::OK();
  }
  void LogData(const rocksdb::Slice& blob) override {
    if (blob.size() != 24 || std::memcmp(blob.data(), "DIXT", 4) != 0) bad = true;
  }
  bool bad = false;
};

// One index's pass over the transactions from `first` to `last`.
void index_pass(raw_db& primary, raw_db& index, std::uint64_t first, std::uint64_t last, std::size_t batch_records) {
  auto* table = primary.families[1];
  auto* entries = index.families[1];
  auto* reverse = index.families[2];
  auto* meta = index.families[3];
  std::unique_ptr<rocksdb::TransactionLogIterator> it;
  check(primary.db->GetUpdatesSince(first, &it), "GetUpdatesSince");
  std::vector<std::string> ids, refs, values;
  std::vector<std::uint32_t> families;
  std::uint64_t unsynced = 0, next = first;
  while (next <= last) {
    ids.clear();
    families.clear();
    batch_keys keys;
    keys.ids = &ids;
    keys.families = &families;
    std::uint64_t through = 0;
    for (; it->Valid() && ids.size() < batch_records && next <= last; it->Next()) {
      auto b = it->GetBatch();
      check(b.writeBatchPtr->Iterate(&keys), "Iterate");
      if (keys.bad) throw std::runtime_error("pipeline floor: a batch without the DIXT header");
      through = b.sequence;
      next = b.sequence + b.writeBatchPtr->Count();
    }
    check(it->status(), "WAL iterator");
    if (ids.empty()) throw std::runtime_error("pipeline floor: the WAL ended early");
    check(primary.db->SyncWAL(), "SyncWAL");
    const auto n = ids.size();
    std::vector<rocksdb::Slice> id_slices(ids.begin(), ids.end());
    std::vector<rocksdb::ColumnFamilyHandle*> tables(n, table);
    std::vector<rocksdb::PinnableSlice> records(n);
    std::vector<rocksdb::Status> statuses(n);
    primary.db->MultiGet(rocksdb::ReadOptions{}, n, tables.data(), id_slices.data(), records.data(), statuses.data());
    refs.clear();
    for (const auto& id : ids) refs.push_back(std::string("main", 5) + "\x01\x00\x00\x00" + id);
    std::vector<rocksdb::Slice> ref_slices(refs.begin(), refs.end());
    std::vector<rocksdb::PinnableSlice> old(n);
    index.db->MultiGet(rocksdb::ReadOptions{}, reverse, n, ref_slices.data(), old.data(), statuses.data());
    rocksdb::WriteBatch wb;
    values.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto record = records[i].ToStringView();
      if (record.size() < 16) throw std::runtime_error("pipeline floor: a record went missing");
      const auto projected = record.substr(8, 8);
      wb.Put(entries, std::string(projected) + refs[i], rocksdb::Slice()).PermitUncheckedError();
      values[i].assign(record.data(), 8);
      values[i] += projected;
      wb.Put(reverse, refs[i], values[i]).PermitUncheckedError();
    }
    std::string cursor;
    put_u64(cursor, through);
    cursor.resize(48, '\0');
    wb.Put(meta, "cursor", cursor).PermitUncheckedError();
    check(index.db->Write(rocksdb::WriteOptions{}, &wb), "index write");
    if ((unsynced += n) >= 4096) {
      check(index.db->SyncWAL(), "index SyncWAL");
      unsynced = 0;
    }
  }
}

}  // namespace

pipeline_floor measure_pipeline_floor(const std::filesystem::path& dir, std::uint64_t commits, std::size_t indexes,
                                      std::size_t batch_records, unsigned cores) {
  const auto base = dir / "pipeline-floor";
  std::filesystem::remove_all(base);
  std::filesystem::create_directories(base);
  pipeline_floor out;
  out.commits = commits;
  out.indexes = indexes;
  {
    raw_db primary(base / "primary", {{"table.1", rocksdb::ColumnFamilyOptions{}}});
    const auto first = primary.db->GetLatestSequenceNumber() + 1;
    std::string header("DIXT\x01\x00\x00\x00", 8);
    header.resize(24, '\0');
    header[16] = 1;  // op_count
    const auto background = threads_cpu_us("rocksdb:");
    auto cpu = process_cpu_us();
    for (std::uint64_t i = 0; i < commits; ++i) {
      std::string value;
      put_u64(value, i + 1);
      value += paced_writer::payload_of(i);
      rocksdb::WriteBatch wb;
      std::memcpy(header.data() + 8, value.data(), 8);  // the header time = the record's version
      wb.PutLogData(header).PermitUncheckedError();
      wb.Put(primary.families[1], "f" + std::to_string(i), value).PermitUncheckedError();
      check(primary.db->Write(rocksdb::WriteOptions{}, &wb), "write");
    }
    out.writer_cpu_us = (process_cpu_us() - cpu) / static_cast<double>(std::max<std::uint64_t>(commits, 1));
    const auto last = primary.db->GetLatestSequenceNumber();
    std::vector<std::unique_ptr<raw_db>> opened;  // opened before the clock starts
    for (std::size_t k = 0; k < indexes; ++k) {
      opened.push_back(std::make_unique<raw_db>(base / ("index-" + std::to_string(k + 1)), index_families()));
    }
    cpu = process_cpu_us();
    for (auto& index : opened) index_pass(primary, *index, first, last, batch_records);
    out.indexes_cpu_us = (process_cpu_us() - cpu) / static_cast<double>(std::max<std::uint64_t>(commits, 1));
    out.background_cpu_us =
        (threads_cpu_us("rocksdb:") - background) / static_cast<double>(std::max<std::uint64_t>(commits, 1));
  }
  std::filesystem::remove_all(base);
  const double total = out.writer_cpu_us + out.indexes_cpu_us;
  out.bound_ratio = total > 0 ? std::min(1.0, static_cast<double>(cores) * out.writer_cpu_us / total) : 0.0;
  return out;
}

}  // namespace dix::bench
