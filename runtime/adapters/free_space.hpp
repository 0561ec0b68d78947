// The filesystem readings of decision 0013 for the primary store: statvfs, and the bytes of the
// live WAL files, which the memtables' flush (or the recovery of the next open) will write again.
// <dix/primary_store.hpp>'s read_store_space is both, for other processes.
#pragma once

#include <cstdint>
#include <filesystem>

#include "core/free_space.hpp"

namespace dix {

// statvfs of `path`: f_bavail and f_blocks in bytes. io_error naming the path and the reason.
result<space_reading> read_space(const std::filesystem::path& path);

// live_wal_bytes(db): core/free_space.hpp (the RocksDB index counts its own WAL the same way).

}  // namespace dix
