// Fuzz target: a WAL record as RocksDB hands it to the log tailer — the bytes of a WriteBatch
// (8-byte sequence, 4-byte count, records) — through adapters/write_batch_reader (RocksDB's own
// parser, then the raw_batch) and core/wal_batch's validation (formats.md §1.3), with the
// family map of a store with two tables. RocksDB's WAL reader refuses a record shorter than the
// 12-byte batch header before anyone builds a WriteBatch of it, so shorter inputs are skipped.
// Properties: every rejection is log_corrupt; an accepted transaction holds Count() operations,
// each on the meta family only in a system transaction, its views inside the batch's bytes.
#include <memory>
#include <string>

#include <rocksdb/write_batch.h>

#include "adapters/write_batch_reader.hpp"
#include "core/bytes.hpp"

#include "fuzz_check.hpp"

namespace {

constexpr std::size_t batch_header_bytes = 12;  // rocksdb WriteBatchInternal::kHeader

bool inside(std::string_view part, const std::string& whole) {
  if (part.empty()) return true;
  return part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < batch_header_bytes) return 0;
  static const dix::family_map families{{0, {dix::family_kind::default_family, 0}},
                                        {1, {dix::family_kind::meta, 0}},
                                        {2, {dix::family_kind::table, 7}},
                                        {3, {dix::family_kind::table, 8}}};
  std::string rep(dix::fuzz::as_view(data, size));
  const auto sequence = dix::get_le<std::uint64_t>(rep, 0);
  auto batch = std::make_shared<const rocksdb::WriteBatch>(rep);
  const std::string& bytes = batch->Data();
  dix::raw_batch raw;
  auto txn = dix::decode_write_batch(batch, sequence, families, raw);
  (void)dix::has_unknown_family(raw, families);
  (void)dix::is_recovery_marker(raw);
  if (!txn) {
    FUZZ_CHECK(txn.error().value() == dix::errc::log_corrupt);
    return 0;
  }
  FUZZ_CHECK(txn->sequence == sequence);
  FUZZ_CHECK(txn->count == batch->Count());
  FUZZ_CHECK(txn->ops.size() == txn->count);
  FUZZ_CHECK(txn->storage != nullptr);
  for (const auto& op : txn->ops) {
    FUZZ_CHECK(op.meta == txn->has_flag(dix::header_flag::system));
    FUZZ_CHECK(op.meta || op.table == 7 || op.table == 8);
    FUZZ_CHECK(op.kind != dix::op_kind::delete_range || txn->has_flag(dix::header_flag::reload));
    FUZZ_CHECK(inside(op.key, bytes) && inside(op.value, bytes));
  }
  return 0;
}
