// The directory a shipped backend keeps its index in (decision 0038): dix never adopts, changes or
// removes what it did not create there.
//
//  * claim(): before the first file of an index is written, the backend writes a marker,
//    `dix-index`, naming its kind and id. A directory is used only when it holds that marker for
//    this kind and id, or nothing at all (then the marker is written first); a missing directory
//    is created (its last component only, mode 0700 whatever the umask). Anything else — a file
//    of a user, another program's database, another index's marker, an index made before markers
//    existed — is refused with store_format_mismatch naming the path and what was found, and
//    nothing is written.
//  * remove_own(): a reset removes only the entries whose names the backend itself writes (its
//    database's files), never the marker, never by a recursive delete: a database that cannot be
//    opened any more (a corrupt CURRENT) is reset by name, and a foreign file that appeared in a
//    claimed directory survives.
//
// Standard library and POSIX only; any thread (each backend calls it from its own).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include <dix/result.hpp>

namespace dix::index_dir {

inline constexpr const char* marker_name = "dix-index";

// Makes `dir` the index directory of backend `kind`/`id`, or refuses it (see above). Idempotent.
result<void> claim(const std::filesystem::path& dir, std::string_view kind, std::string_view id);

// What a reader that writes nothing may conclude: `dir` is this index's (marker found), holds no
// index yet (missing, or empty), or is refused as claim() would refuse it.
enum class state : std::uint8_t { ours, absent };
result<state> look(const std::filesystem::path& dir, std::string_view kind, std::string_view id);

// Unlinks every entry of `dir` for which `own(name)` holds — in a directory `own` names, the
// entries `own` names too, then the directory once it is empty (a file someone put there stays,
// with its directory) — and syncs the directory. Never the marker or its temporary.
// io_error naming the entry and `who` when one cannot be removed.
result<void> remove_own(const std::filesystem::path& dir, const std::function<bool(std::string_view)>& own,
                        const std::string& who);

}  // namespace dix::index_dir
