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

// The bytes of the live WAL files (`<db>/*.log`, not the archive): what is not flushed yet, and
// what a DB::Open of `db` would replay and flush; 0 when there are none or the directory cannot
// be listed (RocksDB reports that itself).
std::uint64_t live_wal_bytes(const std::filesystem::path& db);

}  // namespace dix
