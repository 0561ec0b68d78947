// What tests observe inside a rocksdb_index_backend (not public API): the bytes queued for the
// applier now, and the batches it applied and dropped (another epoch's, protocol.md §9.4); and
// the one thing they change: the free-space reading (decision 0013).
#pragma once

#include <chrono>
#include <cstdint>

#include <dix/backends/rocksdb_index_backend.hpp>

#include "core/free_space.hpp"

namespace dix {

struct rocksdb_index_probe {
  static std::uint64_t queued_bytes(const rocksdb_index_backend& b);
  static std::uint64_t applied_batches(const rocksdb_index_backend& b);
  static std::uint64_t dropped_batches(const rocksdb_index_backend& b);
  // Replaces the reading of the index directory's filesystem (statvfs) and how long one serves.
  static void set_space_probe(rocksdb_index_backend& b, space_probe probe, std::chrono::milliseconds max_age);
};

}  // namespace dix
