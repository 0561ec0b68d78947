// One stored value under its table's projection, as a batch carries it (protocol.md §4.3, §4.4):
// the one place where the tailer's batches, its rebuild scan and the verify's primary side
// (core/projection_digest.hpp) project a record, so what an index is given and what it is checked
// against cannot disagree.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <dix/batch.hpp>
#include <dix/projection.hpp>

namespace dix {

// Sets `out` from `stored` (the 8-byte version and payload; nullopt: no value): absent; unindexable
// `record-corrupt` with version 0 when it is not a record value; else, at its version, record with
// the projected bytes or unindexable with the projection's reason normalized (§4.4). false when the
// projection throws (`out` is then unspecified; the caller names the fault).
bool project_stored(const projection& fn, std::string_view log, std::uint32_t table, std::string_view id,
                    const std::optional<std::string_view>& stored, record_state& out);

}  // namespace dix
