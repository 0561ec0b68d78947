// The digest an index should have (issue 31, formats.md §7), computed from the primary store: a
// snapshot's records of one projected table, in id order, each projected exactly as the tailer
// projects it for a batch (tailer_core::project). A record whose stored value is corrupt, or
// whose projection is unindexable, is not an entry — as it is not in the index. What `dix verify`
// compares with a backend's digest_view at the same cursor.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <dix/backend.hpp>  // digest_entry
#include <dix/digest.hpp>
#include <dix/projection.hpp>
#include <dix/result.hpp>

#include "ports/store_reader.hpp"

namespace dix {

// Adds the entries of `table` of log `log` at `snapshot`, projected with `fn`, to `into`, and
// hands each to `each` (if set) in ascending id order; `each` answering false stops the scan
// (`into` then holds a part). Errors: the snapshot's read errors, and invalid_argument naming the
// table when the projection throws (the runtime treats that as runner-failed).
result<void> add_projection_digest(store_snapshot& snapshot, const std::string& log, std::uint32_t table,
                                   const projection& fn, index_digest& into,
                                   const std::function<bool(const digest_entry&)>& each = {});

}  // namespace dix
