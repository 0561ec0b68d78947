// Port: the metadata records of one backend id in the home store (formats.md §5), as the id's log
// tailer reads and writes them — the only writer (actors.md §1). Each write is one system
// transaction (sync) under the store's commit mutex. The RocksDB adapter is
// runtime/adapters/meta_records (home_meta_store); tests use fakes that record the writes.
#pragma once

#include <cstdint>
#include <optional>

#include <dix/result.hpp>

namespace dix {

// The records acquisition reads (protocol.md §9.2 step 3).
struct meta_records {
  bool condemned = false;                    // condemned/<id> present
  std::optional<std::uint64_t> fingerprint;  // registration/<id>
};

class meta_store {
 public:
  virtual ~meta_store() = default;
  // epoch/<id> = epoch, before anything uses it (protocol.md §9.3).
  virtual result<void> persist_epoch(epoch_t epoch) = 0;
  // condemned/<id> = 01 (protocol.md §10.4).
  virtual result<void> write_marker() = 0;
  // registration/<id> = fingerprint and condemned/<id> deleted, one transaction (§10.4).
  virtual result<void> settle(std::uint64_t fingerprint) = 0;
  // condemned/<id> and registration/<id> as stored now. A failed read is a transient fault;
  // a record of the wrong size is record_corrupt.
  virtual result<meta_records> read_records() = 0;
};

}  // namespace dix
