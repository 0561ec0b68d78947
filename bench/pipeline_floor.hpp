// The floor under `dix bench sustained` (b): what the writer and three RocksDB indexes cost per
// commit when nothing but RocksDB does the work, measured in the same run on the same disk.
//
// Raw RocksDB, no dix code: a writer commits `commits` transactions shaped as primary_store's (a
// 24-byte LogData header and one put of an 8-byte version and a 100-byte payload into a table's
// column family, the WAL written, not synced). Then, once per index, the least any index of this
// design must do for them (protocol.md §4, backends.md §1): read the transactions back from the
// WAL (GetUpdatesSince), per batch of `batch_records` one SyncWAL of the primary (§4.8), one
// MultiGet of the current records, the projection (the payload's first 8 bytes), one MultiGet of
// the index's reverse entries, and one index WriteBatch (entry, reverse entry, cursor) written
// through the index's WAL; a SyncWAL of the index every 4096 records (its barrier). No actors,
// no messages, no copies beyond RocksDB's own.
//
// The bound: the writer is one thread, so alone it makes 10⁶ / writer_cpu_us commits/s on one
// core; with the indexes each commit costs writer_cpu_us + indexes_cpu_us of the `cores`, so no
// implementation of this design on this machine sustains more than
//   bound_ratio = min(1, cores · writer_cpu_us / (writer_cpu_us + indexes_cpu_us))
// of the lone writer's rate with its indexes in step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>

namespace dix::bench {

struct pipeline_floor {
  std::uint64_t commits = 0;
  std::size_t indexes = 0;
  double writer_cpu_us = 0;   // per commit: the raw writer's process CPU
  double indexes_cpu_us = 0;  // per commit: every index's raw pipeline together
  // per commit: of writer_cpu_us + indexes_cpu_us, RocksDB's background threads' (flushes and
  // compactions, when the commits fill a memtable at all)
  double background_cpu_us = 0;
  double bound_ratio = 0;     // see above
};

// Measures in a directory of its own under `dir` (removed after); throws std::runtime_error on a
// RocksDB failure. Nothing else of the process should be busy meanwhile: it reads process CPU.
pipeline_floor measure_pipeline_floor(const std::filesystem::path& dir, std::uint64_t commits, std::size_t indexes,
                                      std::size_t batch_records, unsigned cores);

}  // namespace dix::bench
