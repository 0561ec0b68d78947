// The hooks of a primary store that the runtime's actors use, without RocksDB: the commit
// listeners (the commit bell), the writer gate (protocol.md §13.5), the store's WAL TTL, its
// free-space reserve (decision 0013) and the latest sequence read under the commit mutex (§12.5).
// Everything else of the store's internals is primary_store_impl.hpp, which includes this file
// and <rocksdb/db.h>: the adapters see both, actors/ sees only this one (decision 0047).
#pragma once

#include <cstdint>
#include <functional>

#include <dix/primary_store.hpp>

#include "adapters/write_gate.hpp"

namespace dix {

// What a commit listener hears, after DB::Write returned and the commit mutex was released.
struct commit_event {
  commit_info info;
  std::uint8_t flags = 0;  // header flags (header_flag::system for system transactions)
};

// Listener called after every commit (outside the commit mutex), by every committing thread at
// once: it must be safe to call concurrently (the runtime's captures a weak_ptr and rings bells).
// The id removes it; a commit that loaded the list before the removal may still call it.
std::uint64_t add_commit_listener(primary_store& s, std::function<void(const commit_event&)> fn);
void remove_commit_listener(primary_store& s, std::uint64_t id);

// The writer gate (protocol.md §13.5): the runtime registers each registration's projected
// tables with the store's write_gate. A hook set by set_admission_hook (tests,
// primary_store_impl.hpp) decides instead of it.
write_gate& gate_of(primary_store& s) noexcept;
// Whether a commit to some table of the store may wait or be refused now: an admission hook is
// set, or an entry of the gate is not open. A look without decoding any transaction (the
// committer's, before it holds answers back: decision 0046).
bool store_may_delay(primary_store& s);

// The store's WAL TTL in seconds as opened (store_options::wal_ttl_s), for the rebuild's
// retention fit.
std::uint64_t store_wal_ttl_s(const primary_store& s) noexcept;

// The free-space reserve in force: the configured one, or the automatic one for the store's
// filesystem as last read (decision 0013).
std::uint64_t free_space_reserve(primary_store& s);

// GetLatestSequenceNumber() under the commit mutex, drawing no index time: the readers' `current`
// proof (protocol.md §12.5 step 3). io_error when the store is closed.
result<std::uint64_t> latest_sequence_under_commit_mutex(primary_store& s);

}  // namespace dix
