// Free functions any process may call without a runtime (api.md §7): they read the database's
// shared readiness segment (formats.md §4) and never attach to it.
#pragma once

#include <chrono>
#include <filesystem>
#include <string_view>

#include <dix/readiness.hpp>
#include <dix/result.hpp>

namespace dix {

// The readiness of backend `id` in the database whose home store is `home_db`. Maps the segment
// read-only and takes no lock; while no runtime is attached the state reads `unknown` with the
// stored epoch. No segment (or one still being created): `unknown`, epoch 0. Fails
// invalid_argument (id outside the name rules), not_registered (no slot for `id`),
// segment_layout_mismatch (a segment of another layout), io_error. Thread-safe; does not block.
result<readiness> read_readiness(const std::filesystem::path& home_db, std::string_view id);

// Asks for a rebuild of backend `id` from any process (api.md §7, protocol.md §11.2): maps the
// segment read-write, stores rebuild_request = 1 in the id's slot and notifies; the owner's
// watcher wakes it and it consumes the request, or the next acquisition does (the flag survives a
// stale reset). true when stored. Fails invalid_argument (id outside the name rules),
// not_registered (no segment, or no slot for `id`), segment_layout_mismatch, io_error. The
// owner that consumes the request condemns the index with reason `rebuild-requested` (readiness
// `needs-rebuild`; docs/operations.md says what follows).
result<bool> request_rebuild(const std::filesystem::path& home_db, std::string_view id);

// Does the index include what was committed up to now, from any process (protocol.md §12.5 steps
// 1, 2, 4; api.md §7)? Maps the segment read-only and takes no lock. `bounded` when the slot's
// coverage double read shows `ready` with a usable coverage_time whose age (wall clock now − the
// time, 0 when the clock was stepped back) is ≤ a positive `tolerance`; otherwise `unknown`. The
// age is reported as lag_upper_bound whenever the time is usable. Never fails: no segment, no
// slot, an invalid id, no attached runtime or any error read `unknown`. Never `current` (only the
// owner's process can prove that: runtime::read_coverage).
coverage read_coverage(const std::filesystem::path& home_db, std::string_view id, std::chrono::milliseconds tolerance);

// Blocks the calling thread until backend `id` covers index time `since` (protocol.md §12.6),
// driven by the slot's coverage demand alone: it raises coverage_demand to `since` (CAS max; the
// owner's watcher wakes the owner, which flushes) and futex-waits on the slot's change counter,
// re-checking at every change, until: covered (success); the index `unavailable` (unavailable);
// `timeout` passed (rebuilding when the index was still `needs-rebuild` or `rebuilding` then,
// else index_lagging; both retryable — it waits through a build, as the runtime's wait); the
// token cancelled (cancelled; cancel() wakes it at once). While no runtime is attached it keeps
// waiting. Fails at once invalid_argument (since 0, timeout outside 0…600 000 ms, an id outside
// the name rules), not_registered (no segment, or no slot for `id`), segment_layout_mismatch,
// io_error. Maps the segment read-write.
result<void> wait_for_coverage(const std::filesystem::path& home_db, std::string_view id, index_time_t since,
                               std::chrono::milliseconds timeout, cancel_token cancel = {});

}  // namespace dix
