// Turns a rocksdb::WriteBatch into a raw_batch (its records in order, as views into the batch's
// bytes) for core/wal_batch's validation. Every record kind is captured, including those dix
// never writes, so the validation can name them.
#pragma once

#include <cstdint>

#include <rocksdb/write_batch.h>

#include <dix/result.hpp>

#include "core/wal_batch.hpp"

namespace dix {

// Clears `raw` and fills it. log_corrupt when RocksDB cannot parse the batch. The views stay
// valid while `batch` lives and is not modified.
result<void> read_write_batch(const rocksdb::WriteBatch& batch, std::uint64_t sequence,
                              raw_batch& raw);

// Reads and validates a WAL batch into a transaction (formats.md §1.3). The result keeps `batch`
// alive through wal_transaction::storage.
result<wal_transaction> decode_write_batch(std::shared_ptr<const rocksdb::WriteBatch> batch,
                                           std::uint64_t sequence, const family_map& families,
                                           raw_batch& scratch);

}  // namespace dix
