// Decoding of one WAL record (a RocksDB WriteBatch written by primary_store) into dix operations,
// with every rejection rule of formats.md §1.3. The RocksDB adapter turns a WriteBatch into a
// raw_batch (its records in order, views into the batch's bytes); this pure code validates it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <dix/result.hpp>
#include <dix/wal.hpp>  // op_kind, wal_op, wal_transaction

#include "core/txn_header.hpp"

namespace dix {

// Every record kind a WriteBatch can hold (rocksdb::WriteBatch::Handler's callbacks).
enum class raw_kind : std::uint8_t {
  log_data, put, del, single_delete, delete_range, merge, put_entity, blob_index,
  begin_prepare, end_prepare, commit, commit_with_timestamp, rollback, noop,
};
std::string_view to_string(raw_kind k) noexcept;

struct raw_record {
  raw_kind kind = raw_kind::put;
  std::uint32_t family = 0;  // column family id (0 = default)
  std::string_view key;      // log_data: the blob
  std::string_view value;    // put: stored value; delete_range: end key
};

struct raw_batch {
  std::uint64_t sequence = 0;   // first sequence of the batch
  std::uint32_t count = 0;      // WriteBatch::Count()
  std::uint64_t data_size = 0;  // WriteBatch::GetDataSize()
  std::vector<raw_record> records;
};

enum class family_kind : std::uint8_t { default_family, meta, table };
struct family_role {
  family_kind kind = family_kind::default_family;
  std::uint32_t table = 0;  // for family_kind::table
};
using family_map = std::unordered_map<std::uint32_t, family_role>;

// True when a record names a family id the map does not know: the tailer then refreshes its
// map from the store once before decoding (a table created after it started, protocol.md §3.5).
bool has_unknown_family(const raw_batch& raw, const family_map& families) noexcept;

// RocksDB's own recovery marker (decision 0005): when point-in-time recovery stops at a torn WAL
// tail, RocksDB 7.8.3 writes an empty WriteBatch (Count() 0, no record at all) carrying the
// recovered sequence at the head of the new WAL, so that a later recovery finds consecutive
// sequences. It holds no operation and consumes no sequence number (the next batch starts at the
// same sequence), so log readers skip it. A batch with any record — a dix header included — and
// Count() 0 is not a marker and stays log_corrupt.
bool is_recovery_marker(const raw_batch& raw) noexcept;

// log_corrupt naming the rule for every violation of formats.md §1.3. The result's views point
// into the same bytes as raw's; the caller sets `storage`.
result<wal_transaction> decode_transaction(const raw_batch& raw, const family_map& families);

}  // namespace dix
