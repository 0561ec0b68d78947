// The host of a query-only handle (backends.md §0, decision 0028): what a backend's reader admits
// its queries through in a process with no runtime. It reads the readiness segment of the
// database whose home store is `home_db` with api.md §7's free functions (the time path), so it
// never attaches to the segment and never condemns an index.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include <dix/backend.hpp>

namespace dix {

// The backend_host of a query-only handle: admits queries through the readiness segment of the
// database whose home store is `home_db`, for a process with no runtime. is_owner_epoch is false
// for every epoch; readiness() the slot's (read_readiness; an error reads unknown);
// note_unindexable, request_rebuild and note_hold do nothing (a reader never condemns an index).
// admit_query as api.md §7: `wait` runs wait_for_coverage(home_db, id, since, timeout, cancel)
// first; then readiness rebuilding → rebuilding, not ready → unavailable; the coverage is
// read_coverage(home_db, id, tolerance) (bounded or unknown, never current, so `strict` is always
// refused with index_lagging from another process); bounded needs bounded. Thread-safe; only a
// `wait` admission blocks (≤ its timeout). Nothing is opened until the first call.
std::shared_ptr<backend_host> make_query_host(std::filesystem::path home_db, std::string id);

}  // namespace dix
