// The per-log WAL figures of protocol.md §13.2 as a registration's metrics read them: the store's
// WAL listing (GetSortedWalFiles) is sampled at most once per interval and shared by every caller
// — every registration reading the store — and the figures are computed from it for the caller's
// durable anchor. Implemented in wal_retention.cpp beside the listing; kept apart from
// primary_store_impl.hpp so that a reader of metrics does not include RocksDB.
#pragma once

#include <chrono>
#include <cstdint>

#include <dix/primary_store.hpp>
#include <dix/wal.hpp>

namespace dix {

// The §13.2 figures with the anchor at `anchor_sequence` (0: the oldest file), over the store's
// listing as sampled at most once per `max_age` of `now` (the steady clock). io_error when the
// store is closed or the listing fails.
result<wal_retention> sampled_retention(primary_store& s, std::uint64_t anchor_sequence, std::uint64_t wall_now_ns,
                                        std::chrono::steady_clock::time_point now, std::chrono::milliseconds max_age);

}  // namespace dix
