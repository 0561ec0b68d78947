// Free functions any process may call without a runtime (api.md §7): they read the database's
// shared readiness segment (formats.md §4) and never attach to it.
#pragma once

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

}  // namespace dix
