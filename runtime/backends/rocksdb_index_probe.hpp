// What tests observe inside a rocksdb_index_backend (not public API): the bytes queued for the
// applier now, and the batches it applied and dropped (another epoch's, protocol.md §9.4).
#pragma once

#include <cstdint>

#include <dix/backends/rocksdb_index_backend.hpp>

namespace dix {

struct rocksdb_index_probe {
  static std::uint64_t queued_bytes(const rocksdb_index_backend& b);
  static std::uint64_t applied_batches(const rocksdb_index_backend& b);
  static std::uint64_t dropped_batches(const rocksdb_index_backend& b);
};

}  // namespace dix
