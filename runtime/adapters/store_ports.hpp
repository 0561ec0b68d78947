// The ports over a primary store as the runtime wires them for a registration's log, made
// without RocksDB in the includer: the log source (rocksdb_log_source.hpp) and the store reader
// (rocksdb_store_reader.hpp) behind their port interfaces (decision 0047).
#pragma once

#include <memory>

#include <dix/primary_store.hpp>

#include "ports/log_source.hpp"
#include "ports/store_reader.hpp"

namespace dix {

// A rocksdb_log_source over `store`, which it keeps alive.
std::shared_ptr<log_source> make_rocksdb_log_source(std::shared_ptr<primary_store> store);
// A rocksdb_store_reader over `store`, which it keeps alive.
std::shared_ptr<store_reader> make_rocksdb_store_reader(std::shared_ptr<primary_store> store);

}  // namespace dix
